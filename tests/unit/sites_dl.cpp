// sites_dl.cpp — a call site inside a library loaded with dlopen.
typedef void *(*Capture)();
extern "C" __attribute__((noinline)) void *dlopened_site(Capture capture) {
    void *site = capture();
    asm volatile("" ::: "memory");
    return site;
}
