/* exit_allocations.c — large allocations after the shim's own static
 * destructors have run: from this program's destructor (run by _dl_fini,
 * after every atexit handler), at a site in a module whose symbols the
 * engine has already read, and the engine's exit stats line itself, made
 * larger than the threshold by 200 call sites. Run by exit_allocations.sh
 * with a stats file and an info log, which make the engine name each new
 * call site; it crashed there once (SIGSEGV: the symbol cache was unmapped
 * by its destructor, shim/engine/sites/symbols.cpp). Exits 0, or prints the
 * failed check and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define kBytes (256 << 10) /* above the test's 64 KiB threshold */

__attribute__((noinline)) static void fill_and_free(int v) {
    unsigned char *p = malloc(kBytes);
    if (!p) {
        fprintf(stderr, "exit_allocations: FAIL: malloc(%d) returned NULL\n", kBytes);
        exit(1);
    }
    memset(p, v, kBytes);
    for (size_t i = 0; i < kBytes; i += 4096)
        if (p[i] != (unsigned char)v) {
            fprintf(stderr, "exit_allocations: FAIL: byte %zu reads %d, wrote %d\n", i, p[i], v);
            exit(1);
        }
    free(p);
}

__attribute__((destructor)) static void after_the_shims_destructors(void) {
    fill_and_free(7); /* a new call site, in a module already read */
    fputs("exit_allocations: destructor done\n", stderr);
}

#define TEN(x) x x x x x x x x x x
int main(void) {
    /* 200 call sites: each call has its own return address */
    TEN(TEN(fill_and_free(1);))
    TEN(TEN(fill_and_free(2);))
    puts("exit_allocations: main done");
    return 0;
}
