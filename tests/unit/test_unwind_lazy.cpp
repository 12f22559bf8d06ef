// test_unwind_lazy.cpp — libunwind loaded on first use: concurrent first
// calls never block and all end ready, the library is then in the process,
// and the jump stubs keep unw_getcontext's frame the caller's own.
#include "sites/unwind_lazy.h"
#include "unwind_text.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <vector>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

using namespace spillway;

TEST_CASE("unwind_ready: concurrent first calls do not block and end loaded") {
    std::atomic<bool> go{false};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; i++)
        threads.emplace_back([&] {
            while (!go.load()) {
            }
            if (unwind_ready()) ready++;
        });
    go = true;
    for (auto &t : threads) t.join();
    CHECK(unwind_ready());
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != nullptr);
    if (lib) dlclose(lib);
}

// unw_getcontext records its caller's registers, like setjmp: through a
// stub that called instead of jumped, the first frame would be the stub's.
__attribute__((noinline)) static std::string name_of_own_frame() {
    unw_context_t ctx;
    unw_cursor_t cursor;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cursor, &ctx) != 0) return "";
    char name[256];
    unw_word_t offset = 0;
    if (unw_get_proc_name(&cursor, name, sizeof name, &offset) != 0) return "";
    return name;
}

TEST_CASE("unwind stubs: unw_getcontext sees the caller's frame, unw_backtrace walks it") {
    REQUIRE(unwind_ready());
    std::string name = name_of_own_frame();
    INFO("first frame: " << name);
    CHECK(name.find("name_of_own_frame") != std::string::npos);
    void *frames[8];
    int n = unw_backtrace(frames, 8);
    CHECK(n >= 2);
}

TEST_CASE("unwind_ready publishes libunwind's code bounds for the front's pipe2") {
    REQUIRE(unwind_ready());
    uintptr_t begin = g_unwind_text_begin.load(), end = g_unwind_text_end.load();
    REQUIRE(begin != 0);
    CHECK(begin < end);
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib != nullptr);
    auto inside = (uintptr_t)dlsym(lib, "unw_backtrace");
    dlclose(lib);
    CHECK(inside >= begin);
    CHECK(inside < end);
    auto ours = (uintptr_t)&unwind_ready; // the engine's code is not libunwind's
    CHECK((ours < begin || ours >= end));
}
