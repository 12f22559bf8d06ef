/* stdio_probe.c N — reports on fd 9 what occupies descriptor N ("closed" if nothing). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 0;
    char buf[600] = "closed", link[64];
    if (fcntl(n, F_GETFD) != -1) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", n);
        ssize_t k = readlink(link, buf, sizeof buf - 1);
        buf[k > 0 ? k : 0] = 0;
    }
    dprintf(9, "%s\n", buf);
    return 0;
}
