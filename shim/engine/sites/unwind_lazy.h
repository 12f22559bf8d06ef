// unwind_lazy.h — libunwind, loaded at the first call-site capture instead
// of at start-up (loading it and liblzma cost every process, even one that
// never allocates large).
//
// Invariants:
//  * callsite.cpp keeps calling libunwind's API by its usual names; they are
//    jump stubs in this library (unwind_lazy.cpp) that reach the real
//    functions once unwind_ready() has returned true, never before.
//  * unwind_ready() never blocks: while another thread is loading it returns
//    false (that capture goes without a site), because the loading thread
//    may need the dynamic loader's lock held by this one. The caller holds
//    no lock of ours and is marked as capturing, so the allocations dlopen
//    makes cannot recurse into it.
#pragma once

namespace spillway {

// True once libunwind is loaded (and its per-thread cache enabled); loads
// it on the first call. False if it is being loaded by another thread or
// could not be loaded (one warning, then call sites stay off).
bool unwind_ready();

} // namespace spillway
