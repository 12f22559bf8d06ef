// symbols.h — the name of the function a native frame is in, and whether
// that name can be trusted.
//
// Invariants:
//  * A name is exact only when a symbol's [start, start + size) contains the
//    address: from the object's .symtab, else from the .symtab of its
//    separate debug file (/usr/lib/debug/.build-id/xx/yyyy.debug), else from
//    .dynsym. A stripped library's exported symbols rarely cover its
//    internal functions, so the nearest exported symbol below the address is
//    only a guess: it is returned flagged, and printed with a trailing "?".
//  * module+offset stays the identity of a frame; names are for people and
//    for rules, and a rule matches the name as printed (with the "?").
//  * Cold path only (a site seen for the first time): maps each object file
//    read-only once (kept for the process's life, up to 48 objects) and
//    scans its symbols; takes no lock.
#pragma once

#include <cstdint>
#include <string>

namespace spillway {

struct SymbolName {
    std::string name; // demangled; "" when the object has no symbol below the address
    bool guess = false;
};

// The function containing return address `ip` (ip - 1 is looked up, so a
// call at a function's very end is attributed to it) in the object file
// `path` loaded with bias `load_bias` (link_map::l_addr).
SymbolName symbol_for(const char *path, uintptr_t load_bias, uintptr_t ip);

// "name", "name?" for a guess, "" when unknown: what reports print and
// what a rule's match glob is compared with.
std::string symbol_text(const SymbolName &s);

} // namespace spillway
