// text_sum.h — how the live snapshot (shim/engine/stats/stats_live.cpp)
// proves it is whole, and how the tool (tools/cli/live_snapshot.cpp)
// checks it: the text opens with a fixed-width member
//
//   {"text_sum":"0000012345:0123456789abcdef",<body>
//
// giving the body's length in bytes (10 decimal digits) and its FNV-1a
// 64-bit hash (16 hex digits); the body is everything after that comma, to
// the end of the text, its closing "}\n" included.
//
// Why first and not last: the writer rewrites the text in place (pwrite,
// then ftruncate), so a reader can meet the new text's start followed by
// the old one's end, or the new start alone while the file grows. The
// first bytes always come from one whole text of a writer that sums, so a
// reader that finds no head knows the writer is an older shim (and falls
// back to two identical reads), and one that finds it demands it hold. A
// length that differs from what was read, or a hash that does not match,
// is a torn read. Fixed width lets the writer format the body first and
// fill in the head after it, in the same static buffer.
//
// Invariant: the one definition of the head's layout and of the hash, for
// both sides; libc only and allocation-free (the writer runs in the shim).
#pragma once

#include "stats_format.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace spillway::text_sum {

inline constexpr char kOpen[] = "{\"text_sum\":\"";
inline constexpr size_t kOpenLen = sizeof kOpen - 1;
// kOpen names the key as stats_key::text_sum spells it.
constexpr bool names_key(const char *open, const char *key) {
    for (open += 2; *key; open++, key++)
        if (*open != *key) return false;
    return open[0] == '"' && open[1] == ':' && open[2] == '"' && !open[3];
}
static_assert(names_key(kOpen, stats_key::text_sum), "the head's key is stats_key::text_sum");
inline constexpr size_t kLenDigits = 10, kHashDigits = 16;
// {"text_sum":"LLLLLLLLLL:HHHHHHHHHHHHHHHH",
inline constexpr size_t kHeadLen = kOpenLen + kLenDigits + 1 + kHashDigits + 2;
inline constexpr uint64_t kMaxBody = 9'999'999'999ull;

inline uint64_t fnv1a64(const char *p, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

// Writes the head for the body at buf + kHeadLen (body_len bytes) into
// buf[0, kHeadLen). buf must hold kHeadLen + body_len bytes.
inline void write_head(char *buf, size_t body_len) {
    char head[kHeadLen + 1];
    snprintf(head, sizeof head, "%s%010llu:%016llx\",", kOpen, (unsigned long long)body_len,
             (unsigned long long)fnv1a64(buf + kHeadLen, body_len));
    memcpy(buf, head, kHeadLen);
}

enum class Verdict {
    unsummed, // no head: an older writer's text (or not a snapshot at all)
    whole,    // the head holds: length and hash match
    torn,     // a head that does not hold: a read that met a rewrite
};

inline Verdict check(const char *text, size_t n) {
    // Too short to show the whole key but starting as it does (or empty):
    // a text being written from scratch.
    if (memcmp(text, kOpen, n < kOpenLen ? n : kOpenLen) != 0) return Verdict::unsummed;
    if (n < kHeadLen) return Verdict::torn;
    const char *p = text + kOpenLen;
    uint64_t len = 0, hash = 0;
    for (size_t i = 0; i < kLenDigits; i++) {
        if (p[i] < '0' || p[i] > '9') return Verdict::torn;
        len = len * 10 + (uint64_t)(p[i] - '0');
    }
    p += kLenDigits;
    if (*p++ != ':') return Verdict::torn;
    for (size_t i = 0; i < kHashDigits; i++) {
        char c = p[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) return Verdict::torn;
        hash = hash << 4 | (uint64_t)v;
    }
    p += kHashDigits;
    if (p[0] != '"' || p[1] != ',') return Verdict::torn;
    if (n - kHeadLen != len) return Verdict::torn; // the old text's tail, or the new one cut short
    return fnv1a64(text + kHeadLen, len) == hash ? Verdict::whole : Verdict::torn;
}

} // namespace spillway::text_sum
