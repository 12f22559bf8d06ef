// placement.cpp — see placement.h.
#include "registry/placement.h"

namespace spillway {

const char *backing_name(Backing b) {
    switch (b) {
    case Backing::none: return "none";
    case Backing::disk: return "disk";
    case Backing::memory: return "memory";
    case Backing::anon: return "anon";
    }
    return "?";
}

} // namespace spillway
