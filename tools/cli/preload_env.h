// preload_env.h — the LD_PRELOAD value a child runs with.
//
// Invariant: entries the user already preloads are kept, in their order;
// libspillway comes first (so its malloc wins the symbol lookup over any
// other preloaded allocator) and appears exactly once.
#pragma once

#include <string>

namespace spillway::cli {

std::string compose_ld_preload(const std::string &library, const char *existing);

} // namespace spillway::cli
