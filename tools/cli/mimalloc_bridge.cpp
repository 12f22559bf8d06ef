// mimalloc_bridge.cpp — binds the two mimalloc calls that shim_core's
// callsite.cpp makes to glibc, so the tool never loads libmimalloc.
//
// Why: the tool reads profiles with the shim's profile.cpp, which pulls in
// callsite.cpp (profile_save walks the live call sites), which allocates
// its CallSite records with mi_zalloc/mi_free. Linking libmimalloc.so.2 for
// that would be worse than unnecessary: Debian's build exports malloc and
// free, so it would silently replace glibc's allocator in the whole tool.
// The tool never captures call sites; these definitions only satisfy the
// linker, and forward correctly should that ever change. A new mi_* use in
// shim_core shows up here as a link error, not as a silent allocator swap.
#include <cstdlib>

extern "C" void *mi_zalloc(size_t size) { return calloc(1, size ? size : 1); }
extern "C" void mi_free(void *p) { free(p); }
