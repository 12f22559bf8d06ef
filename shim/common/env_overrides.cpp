// env_overrides.cpp — see env_overrides.h.
#include "env_overrides.h"

#include "size_text.h"
#include "stats_run.h"

#include <cstdio>
#include <cstring>

namespace spillway {

namespace {

// A message assembled piece by piece, snprintf's way: what it needs is
// counted even past cap. say() takes fixed text (tests/docs/messages.py
// finds each message by it), value() a value, written as one line.
struct Line {
    char *out;
    size_t cap;
    size_t used = 0;

    void say(const char *t) { append_raw(t, strlen(t)); }
    void value(const char *v) { append_one_line(out, cap, &used, v, strlen(v)); }
    void append_raw(const char *t, size_t n) {
        for (size_t i = 0; i < n; i++, used++)
            if (used + 1 < cap) out[used] = t[i];
        if (cap) out[used < cap ? used : cap - 1] = 0;
    }
};

const char *value_of(SettingLookup lookup, void *ctx, const char *name) {
    const char *v = lookup(ctx, name);
    return v && *v ? v : nullptr;
}

} // namespace

bool apply_env_overrides(SimpleSettings *s, SettingLookup lookup, void *ctx, char *message, size_t cap,
                         size_t *needed) {
    Line line{message, cap};
    if (cap) message[0] = 0;
    *needed = 0;
    if (const char *v = value_of(lookup, ctx, "SPILLWAY_DIR")) {
        s->spill_dir = v;
        s->spill_dir_given = true;
    }
    if (const char *v = value_of(lookup, ctx, "SPILLWAY_STATS")) s->stats_file = v;
    if (const char *v = value_of(lookup, ctx, "SPILLWAY_STATS_RUN")) {
        if (!stats_run_ok(v, strlen(v))) {
            line.say("environment: SPILLWAY_STATS_RUN: ");
            line.say(kStatsRunExpected);
            line.say(", got \"");
            line.value(v);
            line.say("\"");
            *needed = line.used;
            return false;
        }
        s->stats_run = v;
    }
    if (const char *v = value_of(lookup, ctx, "SPILLWAY_THRESHOLD")) {
        const char *why = nullptr;
        uint64_t bytes = 0;
        if (!parse_size_text(v, strlen(v), &bytes, &why)) {
            line.say("environment: SPILLWAY_THRESHOLD: ");
            size_t at = line.used;
            size_t room = at < cap ? cap - at : 0;
            line.used += (size_t)bad_size_message(room ? message + at : nullptr, room, why, v, strlen(v));
            *needed = line.used;
            return false;
        }
        if (bytes < kMinThreshold) {
            char least[48], got[48];
            format_size_text(least, sizeof least, kMinThreshold);
            format_size_text(got, sizeof got, bytes);
            line.say("environment: SPILLWAY_THRESHOLD: must be at least ");
            line.say(least);
            line.say(", got ");
            line.say(got);
            *needed = line.used;
            return false;
        }
        s->threshold = bytes;
        s->threshold_origin = ThresholdOrigin::environment;
    }
    if (const char *v = value_of(lookup, ctx, "SPILLWAY_POLICY")) {
        if (!parse_policy_word(v, strlen(v), &s->policy)) {
            line.say("environment: SPILLWAY_POLICY: expected one of disk, memory, anon, auto, got \"");
            line.value(v);
            line.say("\"");
            *needed = line.used;
            return false;
        }
    }
    if (const char *v = value_of(lookup, ctx, "SPILLWAY_LOG")) {
        if (!parse_level_word(v, strlen(v), &s->log_level)) {
            line.say("environment: SPILLWAY_LOG: expected one of error, warn, info, debug, got \"");
            line.value(v);
            line.say("\"");
            *needed = line.used;
            return false;
        }
    }
    // validate() of config.cpp, for what the variables may have set: the
    // threshold's floor is checked above, a config's own values by its parser.
    if (s->spill_dir && s->spill_dir[0] != '/') {
        line.value(s->source);
        line.say(": key 'spill.dir': ");
        line.say("expected an absolute directory path, got \"");
        line.value(s->spill_dir);
        line.say("\"");
        *needed = line.used;
        return false;
    }
    return true;
}

} // namespace spillway
