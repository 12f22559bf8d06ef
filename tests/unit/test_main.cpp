// test_main.cpp — Catch2's runner for the unit tests of shim/ internals,
// with one hook: a child process of test_callsite asks for a site identity.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

int print_site_identity_if_asked();

int main(int argc, char **argv) {
    int rc = print_site_identity_if_asked();
    if (rc >= 0) return rc;
    return Catch::Session().run(argc, argv);
}
