// pyframes.h — the innermost Python frames of a large allocation made in a
// CPython process, so two Python lines that reach the same native operator
// are two call sites.
//
// Invariants:
//  * Capture reads only the calling thread's own frames, never waits for or
//    takes the GIL, never allocates, never touches a reference count and
//    never raises a Python exception. Where that cannot be guaranteed (an
//    interpreter version it does not know, a thread of another
//    interpreter, a thread that holds no Python state) it captures nothing
//    and the site is native frames only.
//  * Why the calling thread's frames are safe to read without the GIL: the
//    only code that pushes or pops this thread's frames is this thread, and
//    it is inside malloc. PyTorch releases the GIL around every operator
//    (torch.empty, zeros, add ...), so a GIL-only design would see none of
//    the tensors it exists for.
//  * A frame is (code object, line) on the warm path; file and function
//    names are read on the cold path only (a site seen for the first time),
//    on the same thread, while the frame is still live.
//  * Identity is "relpath:qualname" and the line: the path relative to
//    site-packages/dist-packages, the main script's directory, the current
//    directory, or lib/ of the interpreter's own library, so it survives a
//    move to another machine or checkout.
#pragma once

#include <cstdint>
#include <string>

namespace spillway {

constexpr unsigned kMaxPyFrames = 16;

struct PyFrame {
    const void *code = nullptr; // the code object: stable while the frame runs
    int line = 0;
};

struct PyStack {
    unsigned depth = 0;
    PyFrame frames[kMaxPyFrames];
};

// Finds the interpreter (dlsym(RTLD_DEFAULT)) once; depth 0 turns Python
// capture off. Safe in a process without Python (then capture is a no-op).
void pyframes_init(unsigned depth);
// "3.11 (frame walk)", "3.10 (public API, GIL holders only)",
// "unsupported 3.8" or "none": for the log and tests.
const char *pyframes_mode();

// Warm path: this thread's innermost Python frames, innermost first.
void pyframes_capture(PyStack &out);
uint64_t pyframes_mix(uint64_t key, const PyStack &s);
bool pyframes_equal(const PyStack &a, const PyStack &b);

// Cold path, on the capturing thread before it returns to Python:
// "relpath:qualname:line" of frame i (qualname is the function name before
// 3.11), "?" parts where a name cannot be read safely.
std::string pyframes_text(const PyStack &s, unsigned i);

// "relpath:qualname:line" -> does the rule glob match "relpath:qualname"
// or the whole text? (A glob without a line matches every line.)
bool pyframe_matches(const std::string &glob, const char *text);

// Exposed for tests: the stable form of a code object's file name.
std::string pyframes_relative_path(const std::string &path, const std::string &main_dir,
                                   const std::string &cwd);

} // namespace spillway
