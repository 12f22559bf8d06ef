// cgroup_catch_main.cpp — the Catch2 main of the tests that need a memory
// cgroup of their own: when none can be created here (not root, no memory
// controller) it says why in one line and exits 77, which meson reports as
// SKIP rather than as a pass.
#include "catch_session.h"

#include "memcg.h"

#include <cstdio>

int main(int argc, char **argv) {
    std::string why;
    if (!control_test::MemoryCgroup::create(&why)) {
        fprintf(stderr, "SKIP: %s\n", why.c_str());
        return 77;
    }
    return run_catch_session(argc, argv);
}
