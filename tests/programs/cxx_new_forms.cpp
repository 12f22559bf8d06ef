// cxx_new_forms.cpp — every operator new/delete form under the shim (run by
// under_shim.sh: 1 MiB threshold, a private spill directory): the shim's
// definitions are the ones bound, large requests become disk regions like
// malloc's, aligned forms honour their alignment, and failure is exact:
// the new_handler loop, then std::bad_alloc (throwing forms) or nullptr
// (nothrow forms).
#include "check.h"

#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <initializer_list>
#include <new>

static int (*g_backing)(const void *);
static const size_t kImpossible = SIZE_MAX / 2; // PTRDIFF_MAX: no allocator can give it
static const size_t kLarge = 3 << 20;            // above the 1 MiB threshold

static bool aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

// Without an explicit alignment: what any object of that size needs (the
// default new alignment, or less for a block too small to hold such an object).
static size_t natural_alignment(size_t size) {
    size_t a = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    while (a > 1 && a > size) a >>= 1;
    return a;
}

static void use(void *p, size_t size, size_t align) {
    CHECK(p != nullptr);
    CHECK(aligned(p, align ? align : natural_alignment(size)));
    memset(p, 0x5a, size < 65536 ? size : 65536);
    ((char *)p)[size - 1] = 1;
    // 1 = disk: a large request; 3 = anonymous: a small one whose alignment
    // mimalloc cannot give (above 1 MiB); 0 = mimalloc's.
    int expected = size >= kLarge ? 1 : align > (size_t(1) << 20) ? 3 : 0;
    CHECK(g_backing(p) == expected);
}

// Results go here so the compiler cannot drop an allocation whose result is unused.
static void *volatile g_sink;

static bool is_null(void *p) {
    g_sink = p;
    return p == nullptr;
}

static int g_handler_calls;
static void give_up_on_third_call() {
    if (++g_handler_calls == 3) std::set_new_handler(nullptr);
}
static void throw_at_once() {
    g_handler_calls++;
    throw std::bad_alloc();
}

template <class F> static bool throws_bad_alloc(F &&f) {
    try {
        f();
    } catch (const std::bad_alloc &) {
        return true;
    }
    return false;
}

int main() {
    g_backing = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    CHECK(g_backing != nullptr);

    // Every form this program's references resolve to is the shim's.
    const char *names[] = {"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
                           "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
                           "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
                           "_ZdlPv", "_ZdaPv", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
                           "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
                           "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
                           "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
    for (const char *name : names) {
        Dl_info info;
        void *sym = dlsym(RTLD_DEFAULT, name);
        CHECK(sym && dladdr(sym, &info) && info.dli_fname);
        if (!strstr(info.dli_fname, "libspillway")) {
            fprintf(stderr, "%s resolves to %s\n", name, info.dli_fname);
            CHECK(!"operator new/delete resolves past the shim");
        }
    }

    // Plain, array, nothrow; freed by the plain, sized and nothrow deletes.
    for (size_t size : {size_t(1), size_t(100), size_t(70000), kLarge}) {
        void *p = ::operator new(size);
        use(p, size, 0);
        ::operator delete(p);
        p = ::operator new[](size);
        use(p, size, 0);
        ::operator delete[](p, size);
        p = ::operator new(size, std::nothrow);
        use(p, size, 0);
        ::operator delete(p, size);
        p = ::operator new[](size, std::nothrow);
        use(p, size, 0);
        ::operator delete[](p, std::nothrow);
        p = ::operator new(size);
        ::operator delete(p, std::nothrow);
    }
    void *zero = ::operator new(0); // a unique, non-null pointer
    CHECK(zero != nullptr);
    ::operator delete(zero);

    // Aligned forms, small and large, up to 4 MiB alignment.
    for (size_t align : {size_t(32), size_t(64), size_t(4096), size_t(65536), size_t(2) << 20,
                         size_t(4) << 20}) {
        std::align_val_t al{align};
        for (size_t size : {size_t(24), size_t(100000), kLarge}) {
            void *p = ::operator new(size, al);
            use(p, size, align);
            ::operator delete(p, al);
            p = ::operator new[](size, al);
            use(p, size, align);
            ::operator delete[](p, size, al);
            p = ::operator new(size, al, std::nothrow);
            use(p, size, align);
            ::operator delete(p, size, al);
            p = ::operator new[](size, al, std::nothrow);
            use(p, size, align);
            ::operator delete[](p, al, std::nothrow);
            p = ::operator new[](size, al);
            ::operator delete[](p, al);
            p = ::operator new(size, al);
            ::operator delete(p, al, std::nothrow);
        }
    }
    struct alignas(8192) Page { char bytes[8192]; };
    Page *page = new Page;
    CHECK(aligned(page, 8192));
    delete page;
    char *big = new char[kLarge];
    CHECK(g_backing(big) == 1);
    delete[] big;

    // Failure without a new_handler: bad_alloc from every throwing form,
    // nullptr from every nothrow form.
    std::align_val_t al64{64};
    CHECK(std::get_new_handler() == nullptr);
    CHECK(throws_bad_alloc([] { g_sink = ::operator new(kImpossible); }));
    CHECK(throws_bad_alloc([] { g_sink = ::operator new[](kImpossible); }));
    CHECK(throws_bad_alloc([&] { g_sink = ::operator new(kImpossible, al64); }));
    CHECK(throws_bad_alloc([&] { g_sink = ::operator new[](kImpossible, al64); }));
    CHECK(is_null(::operator new(kImpossible, std::nothrow)));
    CHECK(is_null(::operator new[](kImpossible, std::nothrow)));
    CHECK(is_null(::operator new(kImpossible, al64, std::nothrow)));
    CHECK(is_null(::operator new[](kImpossible, al64, std::nothrow)));

    // The new_handler loop: called until it uninstalls itself, then bad_alloc
    // (throwing) or nullptr (nothrow).
    g_handler_calls = 0;
    std::set_new_handler(give_up_on_third_call);
    CHECK(throws_bad_alloc([] { g_sink = ::operator new(kImpossible); }));
    CHECK(g_handler_calls == 3);
    g_handler_calls = 0;
    std::set_new_handler(give_up_on_third_call);
    CHECK(is_null(::operator new[](kImpossible, al64, std::nothrow)));
    CHECK(g_handler_calls == 3);
    // A handler that throws: the throwing form passes it on, nothrow returns nullptr.
    g_handler_calls = 0;
    std::set_new_handler(throw_at_once);
    CHECK(throws_bad_alloc([] { g_sink = ::operator new[](kImpossible); }));
    CHECK(is_null(::operator new(kImpossible, std::nothrow)));
    CHECK(g_handler_calls == 2);
    std::set_new_handler(nullptr);

    // The process still works after all that.
    void *after = ::operator new(kLarge);
    use(after, kLarge, 0);
    ::operator delete(after);
    printf("cxx_new_forms: all 20 forms bound to the shim; alignment, backing and failure semantics hold\n");
    return 0;
}
