// realloc of a small, over-aligned (> 1 MiB alignment) allocation to a larger
// size that is still below the threshold: large_realloc copies `size` bytes
// from a region mapped for only the original (page-rounded) size -> SIGSEGV.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    void *p = NULL;
    if (posix_memalign(&p, 2 << 20, 100)) return 2;   // a 4 KiB region (alignment > 1 MiB)
    memset(p, 7, 100);
    char *q = realloc(p, 512 << 10);                    // below the 1 MiB threshold
    if (!q || q[0] != 7 || q[99] != 7) return 1;
    free(q);
    puts("ok");
    return 0;
}
