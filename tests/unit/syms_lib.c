/* syms_lib.c — for test_symbols.cpp: an internal (static) function between
 * two exported ones. Built twice: as is (with .symtab) and stripped to its
 * dynamic symbols, where the nearest exported symbol below the internal
 * function is exported_before: a wrong name, which must be flagged. */
#include <stdint.h>

typedef void *(*probe_fn)(void);

__attribute__((visibility("default"), noinline)) void *exported_before(probe_fn probe) {
    void *r = probe();
    __asm__ volatile("" ::: "memory");
    return r;
}

static __attribute__((noinline)) void *internal_worker(probe_fn probe) {
    void *r = probe(); /* returns its own return address: inside internal_worker */
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((visibility("default"), noinline)) void *exported_entry(probe_fn probe) {
    void *r = internal_worker(probe);
    __asm__ volatile("" ::: "memory");
    return r;
}
