// front_state.cpp — the definitions of front_state.h. They live in
// libspillway.so (the front, loaded at start-up) and libspillway_engine.so
// refers to them by name, so both halves see one copy (engine_api.h says
// why there are two halves).
//
// Invariant: before the engine has started, g_large_threshold is SIZE_MAX
// or the threshold judged before main (the default, or the job's:
// front/engine_loader.cpp) and the arena is empty,
// so arena::owns() is false for every pointer and free() never reaches the
// engine.
#include "front_state.h"
#include "unwind_text.h"

namespace spillway {

size_t g_large_threshold = SIZE_MAX;

namespace arena {
uintptr_t g_base = 0;
std::atomic<uintptr_t> g_size{0};
} // namespace arena

// Also here, not in front/unwind_pipe.cpp, so unit tests that link the
// engine without the front have them.
std::atomic<uintptr_t> g_unwind_text_begin{0};
std::atomic<uintptr_t> g_unwind_text_end{0};

} // namespace spillway
