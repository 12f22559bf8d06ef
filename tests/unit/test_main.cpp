// test_main.cpp — Catch2's runner for the unit tests of shim/ internals,
// with one hook: a child process of test_callsite asks for a site identity.
#include "catch_session.h"

int print_site_identity_if_asked();

int main(int argc, char **argv) {
    int rc = print_site_identity_if_asked();
    if (rc >= 0) return rc;
    return run_catch_session(argc, argv);
}
