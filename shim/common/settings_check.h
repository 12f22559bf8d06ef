// settings_check.h — how `spillway run` tells the processes it starts that
// their settings were already judged, so the front may start the engine
// lazily even though settings are given (engine_loader.h).
//
// The runner judges the settings with the shim's own code (exit 78 before
// anything runs), then sets SPILLWAY_CHECKED=<threshold>:<log level>:<hash>
// in the child's environment. The hash covers the seven setting variables as
// the child sees them and, for SPILLWAY_CONFIG, the text of the file: the
// runner hashes the bytes it parsed, the front the bytes it read at
// start-up, and the engine, when it starts, parses the front's bytes (never
// the file again). A process whose settings differ in any of these (a child
// that changes SPILLWAY_THRESHOLD, an edited config file, even one edited
// within the same clock tick at the same size) computes another hash and
// judges its settings at start-up, as without a runner. The threshold and
// level are the judged ones, for the front to use until the engine starts.
//
// Invariant: libc only (the front and the command-line tool both include
// it); the same environment and file always give the same hash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace spillway {

constexpr const char *kCheckedMarker = "SPILLWAY_CHECKED";

// The variables that configure the shim, in hashing order.
constexpr const char *kSettingVariables[] = {"SPILLWAY_CONFIG", "SPILLWAY_DIR",   "SPILLWAY_THRESHOLD",
                                             "SPILLWAY_POLICY", "SPILLWAY_LOG",   "SPILLWAY_STATS",
                                             "SPILLWAY_STATS_RUN"};
constexpr size_t kSettingVariableCount = sizeof kSettingVariables / sizeof kSettingVariables[0];

inline uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

// lookup(ctx, name) returns the variable's value or nullptr; an empty value
// counts as unset, as the shim reads them. config_text: the text of the
// file SPILLWAY_CONFIG names, as judged (nullptr when it is not set).
inline uint64_t settings_hash(const char *(*lookup)(void *ctx, const char *name), void *ctx,
                              const char *config_text, size_t config_len) {
    static const char kFormat[] = "spillway settings, config by content";
    uint64_t h = fnv1a(0xcbf29ce484222325ull, kFormat, sizeof kFormat);
    for (const char *name : kSettingVariables) {
        const char *v = lookup(ctx, name);
        if (v && !*v) v = nullptr;
        h = fnv1a(h, name, strlen(name) + 1);
        h = v ? fnv1a(h, v, strlen(v) + 1) : fnv1a(h, "\x01", 1);
        if (v && strcmp(name, "SPILLWAY_CONFIG") == 0) {
            uint64_t len = config_text ? (uint64_t)config_len : ~0ull;
            h = fnv1a(h, &len, sizeof len);
            if (config_text) h = fnv1a(h, config_text, config_len);
        }
    }
    return h;
}

// "<threshold>:<level>:<hash>" (level: LogLevel's number; threshold 0: none
// was given, the shim derives it, derived_threshold.h).
inline void format_checked(char *out, size_t cap, uint64_t threshold, int level, uint64_t hash) {
    snprintf(out, cap, "%llu:%d:%016llx", (unsigned long long)threshold, level, (unsigned long long)hash);
}

// Parses a marker, exactly as format_checked writes one; false if it is
// not one (the settings are then judged as without a runner). By hand, not
// sscanf: the front parses it before main in every process `spillway run`
// starts, and scanf's first call faulted in and bound its code there
// (about 10 us of /bin/true's start-up).
inline bool parse_checked(const char *text, uint64_t *threshold, int *level, uint64_t *hash) {
    if (!text) return false;
    const char *p = text;
    uint64_t t = 0, l = 0, h = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (t > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return false;
        t = t * 10 + (uint64_t)(*p - '0');
    }
    if (!digits || *p++ != ':') return false;
    for (digits = 0; *p >= '0' && *p <= '9'; p++, digits++) {
        l = l * 10 + (uint64_t)(*p - '0');
        if (l > 1000) return false; // a level is a small number
    }
    if (!digits || *p++ != ':') return false;
    for (digits = 0; *p && digits < 16; p++, digits++) {
        char c = *p;
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0) return false;
        h = h << 4 | (uint64_t)v;
    }
    if (!digits || *p != '\0') return false;
    *threshold = t;
    *level = (int)l;
    *hash = h;
    return true;
}

} // namespace spillway
