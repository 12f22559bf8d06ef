// shared_symbol.h — SPW_SHARED marks the few declarations that
// libspillway.so (the front) defines and libspillway_engine.so uses by name:
// the threshold, the arena's bounds and the logger (engine_api.h says why
// the shim is two libraries). Everything else stays hidden in its library.
#pragma once

#define SPW_SHARED __attribute__((visibility("default")))
