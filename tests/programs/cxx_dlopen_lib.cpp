// cxx_dlopen_lib.cpp — a C++ library a C program opens with dlopen: its
// large `new[]` and std::vector must reach the shim's large path although
// libstdc++ is loaded after libmimalloc.so.2 (issue 14). Each function
// returns spillway_backing() of its allocation while it is alive.
#include <cstring>
#include <dlfcn.h>
#include <vector>

static int backing_of(const void *p) {
    auto backing = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    return backing ? backing(p) : -1;
}

extern "C" __attribute__((visibility("default"))) int cxx_new_array_backing() {
    char *p = new char[256 << 20];
    memset(p, 1, 1 << 20);
    int b = backing_of(p + (100 << 20));
    delete[] p;
    return b;
}

extern "C" __attribute__((visibility("default"))) int cxx_vector_backing() {
    std::vector<float> v(1 << 26);
    v[12345] = 1.0f;
    return backing_of(v.data());
}

// The address operator new resolved to for this library, for the caller to
// name with dladdr.
extern "C" __attribute__((visibility("default"))) void *cxx_operator_new_address() {
    return (void *)static_cast<void *(*)(size_t)>(&::operator new);
}
