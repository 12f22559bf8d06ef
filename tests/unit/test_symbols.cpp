// test_symbols.cpp — native frame names users can trust: the function
// containing an address is named exactly from .symtab; in a stripped copy
// of the same library only exported symbols remain, and the name of an
// internal function's frame (the nearest exported symbol below it, a
// different function) is flagged as a guess and printed with "?"; a frame
// named by an exported symbol that contains it stays exact.
#include "sites/symbols.h"

#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <link.h>

using namespace spillway;

typedef void *(*probe_fn)();
typedef void *(*entry_fn)(probe_fn);

static __attribute__((noinline)) void *return_address() { return __builtin_return_address(0); }

struct Frame {
    std::string path;
    uintptr_t bias = 0, ip = 0;
};

static Frame frame_in(const char *lib, const char *entry) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h);
    auto fn = (entry_fn)dlsym(h, entry);
    REQUIRE(fn);
    Frame f;
    f.ip = (uintptr_t)fn(return_address);
    Dl_info info;
    struct link_map *map = nullptr;
    REQUIRE(dladdr1((void *)(f.ip - 1), &info, (void **)&map, RTLD_DL_LINKMAP));
    f.path = map->l_name;
    f.bias = map->l_addr;
    return f;
}

TEST_CASE("an internal function is named exactly from the symbol table") {
    Frame f = frame_in(SYMS_PATH, "exported_entry");
    SymbolName s = symbol_for(f.path.c_str(), f.bias, f.ip);
    CHECK(s.name == "internal_worker");
    CHECK_FALSE(s.guess);
    CHECK(symbol_text(s) == "internal_worker");
}

TEST_CASE("in a stripped library the nearest exported name is flagged as a guess") {
    Frame f = frame_in(SYMS_STRIPPED_PATH, "exported_entry");
    SymbolName s = symbol_for(f.path.c_str(), f.bias, f.ip);
    CHECK(s.name == "exported_before"); // what dladdr-style naming would claim
    CHECK(s.guess);
    CHECK(symbol_text(s) == "exported_before?");
}

TEST_CASE("an exported function containing the address is exact even when stripped") {
    Frame f = frame_in(SYMS_STRIPPED_PATH, "exported_before");
    SymbolName s = symbol_for(f.path.c_str(), f.bias, f.ip);
    CHECK(s.name == "exported_before");
    CHECK_FALSE(s.guess);
}

TEST_CASE("an unreadable object has no name") {
    CHECK(symbol_for("/nonexistent/lib.so", 0, 0x1000).name.empty());
    CHECK(symbol_for("/proc/self/status", 0, 0x1000).name.empty()); // not ELF
    CHECK(symbol_text(SymbolName{}).empty());
}
