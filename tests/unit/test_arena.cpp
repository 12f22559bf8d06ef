// test_arena.cpp — the reserved range: one-comparison ownership, aligned
// first-fit, in-place extension, coalescing give-back, the slot table, and
// the reservation growing and shrinking with what regions hold.
#include "shim_fixture.h"

#include "registry/region.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace spillway;

TEST_CASE("ownership is exactly the reserved range") {
    test::bring_up();
    REQUIRE(arena::g_size > 0);
    CHECK(arena::g_base % arena::kGranule == 0);
    CHECK(arena::owns((void *)arena::g_base));
    CHECK(arena::owns((void *)(arena::g_base + arena::g_size - 1)));
    CHECK_FALSE(arena::owns((void *)(arena::g_base + arena::g_size)));
    CHECK_FALSE(arena::owns((void *)(arena::g_base - 1)));
    CHECK_FALSE(arena::owns(nullptr));
    void *heap = std::malloc(64);
    CHECK_FALSE(arena::owns(heap));
    std::free(heap);
}

TEST_CASE("take, extend and give back keep the free space consistent") {
    test::bring_up();
    std::lock_guard<std::mutex> guard(large_lock());
    size_t before = arena::used_bytes();
    const size_t G = arena::kGranule;
    uintptr_t a = arena::take(3 * G + 1, G);
    REQUIRE(a);
    CHECK(a % G == 0);
    CHECK(arena::used_bytes() == before + 4 * G); // 3 granules + 1 byte rounds to 4
    arena::give_back(a, 4 * G);

    // a and its neighbour b carved out of one block, so b is right after a
    // whatever holes earlier tests left: a cannot grow in place until b is
    // returned.
    uintptr_t block = arena::take(5 * G, G);
    REQUIRE(block);
    a = block;
    uintptr_t b = block + 4 * G;
    CHECK(arena::used_bytes() == before + 5 * G);
    CHECK_FALSE(arena::extend(a, 4 * G, 6 * G));
    arena::give_back(b, G);
    CHECK(arena::extend(a, 4 * G, 6 * G));
    CHECK(arena::used_bytes() == before + 6 * G);

    uintptr_t big = arena::take(5 * G, size_t(1) << 30);
    REQUIRE(big);
    CHECK(big % (size_t(1) << 30) == 0);
    arena::give_back(big, 5 * G);
    arena::give_back(a, 6 * G);
    CHECK(arena::used_bytes() == before);
    CHECK(arena::take(arena::max_bytes() + G, G) == 0); // larger than the arena may ever grow
}

TEST_CASE("the slot table maps every granule of a region, interior pointers included") {
    test::bring_up();
    const size_t G = arena::kGranule;
    uintptr_t start;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        start = arena::take(3 * G, G);
    }
    Region r;
    r.start = start;
    arena::publish(&r, start, 3 * G);
    CHECK(arena::region_at((void *)start) == &r);
    CHECK(arena::region_at((void *)(start + 2 * G + 77)) == &r);
    CHECK(arena::region_at((void *)(start + 3 * G)) != &r);
    arena::unpublish(start, 3 * G);
    CHECK(arena::region_at((void *)start) == nullptr);
    CHECK(arena::unmap_to_reserved(start, 3 * G));
    std::lock_guard<std::mutex> guard(large_lock());
    arena::give_back(start, 3 * G);
}

namespace {
const size_t G = arena::kGranule;
size_t reserved() { return arena::g_size.load(); }
} // namespace

TEST_CASE("start-up reserves one step, not terabytes") {
    test::bring_up();
    CHECK(arena::max_bytes() >= (size_t(1) << 40));
    // Other tests may hold regions, but never more than a step's slack beyond them.
    CHECK(reserved() <= arena::used_bytes() + arena::step_after(arena::used_bytes()) + 2 * arena::kMinStep);
}

TEST_CASE("growth steps are half of what is held, between the smallest and largest step") {
    CHECK(arena::kInitialBytes == arena::kMinStep);
    CHECK(arena::kInitialBytes <= (size_t(32) << 20)); // room under a 200 MB RLIMIT_AS
    CHECK(arena::step_after(0) == arena::kMinStep);
    CHECK(arena::step_after(arena::kMinStep) == arena::kMinStep);
    CHECK(arena::step_after(size_t(100) << 20) == (size_t(64) << 20));
    CHECK(arena::step_after(size_t(10) << 30) == arena::kMaxStep);
}

TEST_CASE("the reservation grows for a region that does not fit, and shrinks back") {
    test::bring_up();
    std::lock_guard<std::mutex> guard(large_lock());
    size_t before = reserved();
    size_t big_len = before + 3 * arena::kMinStep + G; // cannot fit in what is reserved
    uintptr_t big = arena::take(big_len, G);
    REQUIRE(big);
    CHECK(reserved() >= big - arena::g_base + big_len);
    CHECK(reserved() % arena::kMinStep == 0);
    size_t big_end = big - arena::g_base + big_len;
    CHECK(reserved() <= (big_end + arena::kMinStep - 1) / arena::kMinStep * arena::kMinStep +
                            arena::step_after(big_end)); // bounded slack
    // Every byte of the grown range is mapped (PROT_NONE): mincore fails
    // with ENOMEM on an unmapped page, succeeds on a reserved one.
    unsigned char vec[1];
    CHECK(mincore((void *)(big + big_len - 4096), 4096, vec) == 0);
    CHECK(arena::owns((void *)(big + big_len - 1)));
    // The slot table covers the new granules, far end included.
    Region r;
    arena::publish(&r, big, big_len);
    CHECK(arena::region_at((void *)(big + big_len - 1)) == &r);
    arena::unpublish(big, big_len);
    CHECK(arena::region_at((void *)(big + big_len - 1)) == nullptr);

    // A region at the top grows in place by growing the reservation.
    size_t top_len = reserved() - (big - arena::g_base);
    if (top_len >= big_len + G) { // the slack after big is free: use it all first
        REQUIRE(arena::extend(big, big_len, top_len));
        big_len = top_len;
    }
    REQUIRE(arena::extend(big, big_len, big_len + arena::kMinStep));
    big_len += arena::kMinStep;
    CHECK(reserved() >= big - arena::g_base + big_len);

    uintptr_t end = arena::g_base + reserved();
    arena::give_back(big, big_len);
    CHECK(reserved() <= before + arena::step_after(before));
    CHECK_FALSE(arena::owns((void *)(end - 1)));
    // The top was unmapped, not left reserved.
    CHECK(mincore((void *)(end - 4096), 4096, vec) == -1);
}

TEST_CASE("a mapping right after the range stops growth: take returns 0, the caller falls back") {
    test::bring_up();
    std::lock_guard<std::mutex> guard(large_lock());
    uintptr_t end = arena::g_base + reserved();
    void *blocker = mmap((void *)end, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    REQUIRE(blocker == (void *)end);
    CHECK(arena::take(reserved() + G, G) == 0);
    CHECK(arena::g_base + reserved() == end); // unchanged
    CHECK(arena::owns(blocker) == false);
    munmap(blocker, 4096);
    size_t want = reserved() + G; // once: the take below grows reserved()
    uintptr_t p = arena::take(want, G); // room again
    REQUIRE(p);
    arena::give_back(p, want);
}

TEST_CASE("RLIMIT_AS lowered after start-up: growth fails cleanly, what is reserved still works") {
    test::bring_up();
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::lock_guard<std::mutex> guard(large_lock());
        rlimit lim{size_t(4) << 30, size_t(4) << 30};
        if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(2);
        if (arena::take(size_t(8) << 30, G) != 0) _exit(3);     // past the limit
        uintptr_t small = arena::take(G, G);                    // inside the reservation
        if (!small) _exit(4);
        uintptr_t grown = arena::take(reserved() + G, G);       // a little growth fits the limit
        if (!grown) _exit(5);
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("RLIMIT_AS lowered before start-up (the engine starts at first use): the range still starts far from other mappings") {
    // A probe with mmap can be no larger than the budget RLIMIT_AS leaves,
    // so its middle lay a few hundred MiB below the next mapping, and
    // ordinary mappings soon blocked growth (programs/rlimit_as failed).
    test::bring_up();
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::lock_guard<std::mutex> guard(large_lock());
        arena::release_for_tests();
        rlimit lim{size_t(4) << 30, size_t(4) << 30};
        if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(2);
        if (!arena::reserve(size_t(16) << 40)) _exit(3);
        uintptr_t end = arena::g_base + reserved();
        // The next mapping above the range, from /proc/self/maps.
        FILE *maps = fopen("/proc/self/maps", "r");
        if (!maps) _exit(4);
        unsigned long lo = 0, hi = 0, next = ~0ul;
        char line[512];
        while (fgets(line, sizeof line, maps))
            if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo >= end && lo < next) next = lo;
        fclose(maps);
        _exit(next - end >= (size_t(1) << 40) ? 0 : 5); // a terabyte of room at least
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("growth refused by RLIMIT_AS: one warning line that says how far to raise ulimit -v") {
    test::bring_up();
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        std::lock_guard<std::mutex> guard(large_lock());
        arena::release_for_tests(); // a fresh reservation: its one warning not given yet
        if (!arena::reserve(size_t(1) << 40)) _exit(2);
        rlimit lim{size_t(4) << 30, size_t(4) << 30};
        if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
        log_configure(LogLevel::warn, fds[1]);
        if (arena::take(size_t(8) << 30, G) != 0) _exit(4);
        _exit(0);
    }
    close(fds[1]);
    std::string text;
    char buf[512];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, (size_t)n);
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    INFO(text);
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
    CHECK(text.find("cannot grow the address range") != std::string::npos);
    CHECK(text.find("raise ulimit -v (RLIMIT_AS, now 4096 MiB) by at least") != std::string::npos);
}
