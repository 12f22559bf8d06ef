// arena_hole.c — a region moved by mremap (realloc with no room to grow in
// place) must leave no unmapped hole inside the arena: the arena invariant is
// "every byte always mapped, nothing else can be given an address inside
// it". Found by hardening (shim bug 2 of tests/hardening/README.md): the old
// range's unused tail (va_len > map_len) stays reserved, so re-reserving the
// whole old range with MAP_FIXED_NOREPLACE fails with EEXIST, the range is
// "lost" and left unmapped; the next mmap(NULL) lands inside the arena, where
// arena::owns() claims it (free() of such memory would abort).
// Run under the shim with SPILLWAY_POLICY=anon and SPILLWAY_THRESHOLD=1MiB.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
int main(void) {
    char *p = malloc(3 << 20);           // anon region, map_len 3 MiB, va_len 4 MiB
    memset(p, 1, 3 << 20);
    char *neighbour = malloc(3 << 20);   // occupies the granules after p: no room to grow in place
    neighbour[0] = 1;
    char *q = realloc(p, 40 << 20);      // no room after it: moved by mremap
    printf("old %p new %p\n", (void *)p, (void *)q);
    for (int i = 0; i < 64; i++) {
        char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m >= p && m < p + (4 << 20)) {
            printf("mmap #%d returned %p: INSIDE the arena hole\n", i, (void *)m);
            return 1;
        }
    }
    puts("no mmap landed in the hole");
    return 0;
}
