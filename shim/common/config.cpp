// config.cpp — see config.h. toml++ is compiled header-only into the shim so
// the preloaded library depends on no toml++ ABI.
#include "config.h"

#include "env_overrides.h"
#include "settings_check.h"
#include "size_parse.h"
#include "spill_dir_check.h"
#include "stats_run.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

namespace spillway {

std::string default_spill_dir() {
    char path[64];
    default_spill_dir_text(path, sizeof path);
    return path;
}

const char *policy_name(Policy p) { return policy_word(p); }

bool parse_policy(std::string_view text, Policy &out) { return parse_policy_word(text.data(), text.size(), &out); }

const char *access_name(Access a) {
    switch (a) {
    case Access::unknown: return "unknown";
    case Access::sequential: return "sequential";
    case Access::random: return "random";
    }
    return "?";
}

const char *python_arenas_name(PythonArenas a) {
    switch (a) {
    case PythonArenas::auto_: return "auto";
    case PythonArenas::always: return "always";
    case PythonArenas::never: return "never";
    }
    return "?";
}

static const char *level_name(LogLevel l) { return level_word(l); }

static bool parse_level(std::string_view text, LogLevel &out) { return parse_level_word(text.data(), text.size(), &out); }

namespace {

// toml++ quotes raw input in its messages; a newline in it would break the
// one-line contract.
std::string one_line(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if ((unsigned char)c < 0x20) out += ' ';
        else out += c;
    }
    return out;
}

// Line of the first byte >= 0x80 outside a comment, or 0. toml++ 3.3.0's
// is_non_ascii_horizontal_whitespace reaches __builtin_unreachable()
// (undefined behaviour) for most non-ASCII code points, in bare context and
// inside strings alike (found by fuzzing), so raw non-ASCII bytes are
// refused before toml++ sees the text; a string can still hold any
// character as a \uXXXX escape.
int bare_non_ascii_line(std::string_view t) {
    int line = 1;
    size_t i = t.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0; // a UTF-8 byte order mark is fine
    while (i < t.size()) {
        char c = t[i];
        if (c == '\n') {
            line++;
            i++;
        } else if (c == '#') {
            while (i < t.size() && t[i] != '\n') i++;
        } else if (c == '"' || c == '\'') {
            bool multi = t.substr(i, 3) == std::string(3, c);
            size_t q = multi ? 3 : 1;
            i += q;
            while (i < t.size()) {
                if (t[i] == '\n') line++;
                if ((unsigned char)t[i] >= 0x80) return line;
                if (c == '"' && t[i] == '\\') {
                    i += 2;
                    continue;
                }
                if (t.substr(i, q) == std::string(q, c)) {
                    i += q;
                    break;
                }
                if (!multi && t[i] == '\n') break; // unterminated: let toml++ report it
                i++;
            }
        } else if ((unsigned char)c >= 0x80) {
            return line;
        } else {
            i++;
        }
    }
    return 0;
}

// A Python rule names a file and a function: "FILE:FUNCTION[:LINE]", at
// least one colon, no whitespace (a pasted frame with its "(python)" tag).
bool python_glob_ok(const std::string &g) {
    if (g.empty() || g.front() == ':' || g.find(':') == std::string::npos) return false;
    for (char c : g)
        if (c == ' ' || c == '\t') return false;
    return true;
}

// Thrown inside this file only; converted to the one-line message.
struct BadKey {
    std::string message;
};

class Reader {
  public:
    explicit Reader(const std::string &source) : source_(source) {}

    [[noreturn]] void fail(const toml::node *node, const std::string &key, const std::string &what) {
        std::ostringstream line;
        line << source_;
        if (node && node->source().begin.line) line << ":" << node->source().begin.line;
        line << ": key '" << key << "': " << what;
        throw BadKey{one_line(line.str())}; // keys and values may hold newlines
    }

    void reject_unknown(const toml::table &table, const std::string &prefix,
                        std::initializer_list<const char *> known) {
        for (auto &&[k, v] : table) {
            bool ok = false;
            for (const char *name : known)
                if (k.str() == name) ok = true;
            if (!ok) {
                std::string list;
                for (const char *name : known) list += std::string(list.empty() ? "" : ", ") + name;
                fail(&v, prefix + std::string(k.str()),
                     "unknown key; expected one of: " + list + " (see config/spillway.toml)");
            }
        }
    }

    const toml::table *table(const toml::table &parent, const char *name) {
        const toml::node *n = parent.get(name);
        if (!n) return nullptr;
        if (!n->is_table()) fail(n, name, "expected a table [" + std::string(name) + "]");
        return n->as_table();
    }

    void size(const toml::table &t, const char *name, const std::string &key, uint64_t &out) {
        const toml::node *n = t.get(name);
        if (!n) return;
        // is_integer first: value<int64_t>() converts a float node, and one
        // past int64's range is undefined behaviour (found by fuzz_config).
        if (n->is_integer()) {
            const int64_t i = *n->value<int64_t>();
            if (i < 0) fail(n, key, "expected a non-negative size, got " + std::to_string(i));
            out = (uint64_t)i;
            return;
        }
        if (!n->is_string()) fail(n, key, "expected a size string such as \"64MiB\"");
        std::string err;
        if (!parse_size(*n->value<std::string>(), out, err)) fail(n, key, err);
    }

    void string(const toml::table &t, const char *name, const std::string &key, std::string &out) {
        const toml::node *n = t.get(name);
        if (!n) return;
        if (!n->is_string()) fail(n, key, "expected a string");
        out = *n->value<std::string>();
    }

    void boolean(const toml::table &t, const char *name, const std::string &key, bool &out) {
        const toml::node *n = t.get(name);
        if (!n) return;
        if (!n->is_boolean()) fail(n, key, "expected true or false");
        out = *n->value<bool>();
    }

    void integer(const toml::table &t, const char *name, const std::string &key, int64_t lo, int64_t hi,
                 unsigned &out) {
        const toml::node *n = t.get(name);
        if (!n) return;
        std::string range = "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
        if (!n->is_integer()) fail(n, key, range);
        int64_t v = *n->value<int64_t>();
        if (v < lo || v > hi) fail(n, key, range + ", got " + std::to_string(v));
        out = (unsigned)v;
    }

    void policy(const toml::table &t, const char *name, const std::string &key, Policy &out) {
        const toml::node *n = t.get(name);
        if (!n) return;
        if (!n->is_string() || !parse_policy(*n->value<std::string>(), out))
            fail(n, key, "expected one of \"disk\", \"memory\", \"anon\", \"auto\"");
    }

  private:
    const std::string &source_;
};

void validate(const Settings &s, Reader &r) {
    if (s.threshold < kMinThreshold)
        r.fail(nullptr, "threshold", "must be at least " + format_size(kMinThreshold) + ", got " +
                                         format_size(s.threshold));
    if (s.spill_dir.empty() || s.spill_dir[0] != '/')
        r.fail(nullptr, "spill.dir", "expected an absolute directory path, got \"" + s.spill_dir + "\"");
    if (s.callsite_depth < 1 || s.callsite_depth > 64)
        r.fail(nullptr, "callsites.depth", "expected 1 to 64 frames");
}

} // namespace

std::optional<std::string> parse_config_text(std::string_view text, const std::string &source,
                                             Settings &s) {
    Reader r(source);
    try {
        if (int line = bare_non_ascii_line(text))
            return source + ":" + std::to_string(line) +
                   ": TOML syntax error: a non-ASCII character outside a comment; write it as a "
                   "\\uXXXX escape inside a quoted string";
        toml::table root;
        try {
            root = toml::parse(text, source);
        } catch (const toml::parse_error &e) {
            std::ostringstream line;
            line << source << ":" << e.source().begin.line << ":" << e.source().begin.column
                 << ": TOML syntax error: " << one_line(e.description());
            return line.str();
        }
        r.reject_unknown(root, "", {"threshold", "policy", "spill", "memory", "log", "stats",
                                    "profile", "callsites", "shm", "fork", "python", "tiering", "rule"});
        r.size(root, "threshold", "threshold", s.threshold);
        if (root.contains("threshold")) s.threshold_origin = ThresholdOrigin::config;
        r.policy(root, "policy", "policy", s.policy);
        if (auto *t = r.table(root, "spill")) {
            r.reject_unknown(*t, "spill.", {"dir", "allow_tmpfs", "dedicated_min"});
            r.string(*t, "dir", "spill.dir", s.spill_dir);
            if (t->contains("dir")) s.spill_dir_given = true;
            r.boolean(*t, "allow_tmpfs", "spill.allow_tmpfs", s.allow_tmpfs);
            r.size(*t, "dedicated_min", "spill.dedicated_min", s.dedicated_min);
        }
        if (auto *t = r.table(root, "memory")) {
            r.reject_unknown(*t, "memory.", {"reserve"});
            r.size(*t, "reserve", "memory.reserve", s.memory_reserve);
        }
        if (auto *t = r.table(root, "log")) {
            r.reject_unknown(*t, "log.", {"level", "file"});
            if (const toml::node *n = t->get("level"))
                if (!n->is_string() || !parse_level(*n->value<std::string>(), s.log_level))
                    r.fail(n, "log.level", "expected one of \"error\", \"warn\", \"info\", \"debug\"");
            r.string(*t, "file", "log.file", s.log_file);
        }
        if (auto *t = r.table(root, "stats")) {
            r.reject_unknown(*t, "stats.", {"file", "run"});
            r.string(*t, "file", "stats.file", s.stats_file);
            r.string(*t, "run", "stats.run", s.stats_run);
            if (!stats_run_ok(s.stats_run.data(), s.stats_run.size()))
                r.fail(t->get("run"), "stats.run", std::string(kStatsRunExpected) + ", got \"" + s.stats_run + "\"");
        }
        if (auto *t = r.table(root, "profile")) {
            r.reject_unknown(*t, "profile.", {"file", "learn", "probe"});
            r.string(*t, "file", "profile.file", s.profile_file);
            r.boolean(*t, "learn", "profile.learn", s.learn);
            r.boolean(*t, "probe", "profile.probe", s.learn_probe);
        }
        if (auto *t = r.table(root, "callsites")) {
            r.reject_unknown(*t, "callsites.", {"enabled", "depth", "python_depth"});
            r.boolean(*t, "enabled", "callsites.enabled", s.callsites);
            if (const toml::node *n = t->get("depth")) {
                if (!n->is_integer()) r.fail(n, "callsites.depth", "expected an integer from 1 to 64");
                int64_t d = *n->value<int64_t>();
                if (d < 1 || d > 64) r.fail(n, "callsites.depth", "expected an integer from 1 to 64");
                s.callsite_depth = (unsigned)d;
            }
            if (const toml::node *n = t->get("python_depth")) {
                int64_t d = n->is_integer() ? *n->value<int64_t>() : -1;
                if (d < 0 || d > 16)
                    r.fail(n, "callsites.python_depth", "expected an integer from 0 (off) to 16");
                s.python_depth = (unsigned)d;
            }
        }
        if (auto *t = r.table(root, "shm")) {
            r.reject_unknown(*t, "shm.", {"redirect", "min_size"});
            r.boolean(*t, "redirect", "shm.redirect", s.shm_redirect);
            r.size(*t, "min_size", "shm.min_size", s.shm_min);
        }
        if (auto *t = r.table(root, "fork")) {
            r.reject_unknown(*t, "fork.", {"snapshot"});
            r.boolean(*t, "snapshot", "fork.snapshot", s.fork_snapshot);
        }
        if (auto *t = r.table(root, "python")) {
            r.reject_unknown(*t, "python.", {"arenas"});
            if (const toml::node *n = t->get("arenas")) {
                std::string v = n->is_string() ? *n->value<std::string>() : "";
                if (v == "auto") s.python_arenas = PythonArenas::auto_;
                else if (v == "always") s.python_arenas = PythonArenas::always;
                else if (v == "never") s.python_arenas = PythonArenas::never;
                else r.fail(n, "python.arenas", "expected one of \"auto\", \"always\", \"never\"");
            }
        }
        if (auto *t = r.table(root, "tiering")) {
            r.reject_unknown(*t, "tiering.", {"enabled", "min_size", "promote_rate", "interval_ms",
                                              "cooldown_ms", "demote_margin", "horizon_ms"});
            TierSettings &ts = s.tiering;
            r.boolean(*t, "enabled", "tiering.enabled", ts.enabled);
            r.size(*t, "min_size", "tiering.min_size", ts.min_size);
            r.size(*t, "promote_rate", "tiering.promote_rate", ts.promote_rate);
            r.integer(*t, "interval_ms", "tiering.interval_ms", 10, 60000, ts.interval_ms);
            r.integer(*t, "cooldown_ms", "tiering.cooldown_ms", 0, 3600000, ts.cooldown_ms);
            r.size(*t, "demote_margin", "tiering.demote_margin", ts.demote_margin);
            r.integer(*t, "horizon_ms", "tiering.horizon_ms", 0, 60000, ts.horizon_ms);
            if (ts.promote_rate == 0)
                r.fail(t->get("promote_rate"), "tiering.promote_rate",
                       "expected a size per second above zero (set tiering.enabled = false to stop moves)");
        }
        if (const toml::node *n = root.get("rule")) {
            if (!n->is_array_of_tables()) r.fail(n, "rule", "expected [[rule]] tables");
            for (const toml::node &item : *n->as_array()) {
                const toml::table &t = *item.as_table();
                r.reject_unknown(t, "rule.", {"match", "module", "python", "policy", "access"});
                Rule rule;
                rule.line = (int)item.source().begin.line;
                r.string(t, "match", "rule.match", rule.match);
                r.string(t, "module", "rule.module", rule.module);
                r.string(t, "python", "rule.python", rule.python);
                if (const toml::node *p = t.get("python"); p && !python_glob_ok(rule.python))
                    r.fail(p, "rule.python",
                           "expected \"FILE:FUNCTION\" or \"FILE:FUNCTION:LINE\" (globs allowed), "
                           "e.g. \"train.py:build_csr*\", got \"" + rule.python + "\"");
                if (!t.get("policy")) r.fail(&item, "rule.policy", "every [[rule]] needs a policy; add policy = \"memory\" (or \"disk\", \"anon\", \"auto\")");
                r.policy(t, "policy", "rule.policy", rule.policy);
                if (const toml::node *a = t.get("access")) {
                    std::string v = a->is_string() ? *a->value<std::string>() : "";
                    if (v == "sequential") rule.access = Access::sequential;
                    else if (v == "random") rule.access = Access::random;
                    else r.fail(a, "rule.access", "expected \"sequential\" or \"random\"");
                }
                if (rule.match.empty() && rule.module.empty() && rule.python.empty())
                    r.fail(&item, "rule", "a rule needs match, module or python (one that names nothing would match every allocation); add one of them");
                s.rules.push_back(std::move(rule));
            }
        }
        validate(s, r);
    } catch (const BadKey &e) {
        return e.message;
    }
    return std::nullopt;
}

std::optional<std::string> read_config_file(const char *path, std::string &out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return std::string(path) + ": cannot read the config file named by SPILLWAY_CONFIG (" +
               strerror(errno) + "); fix the path or unset SPILLWAY_CONFIG";
    char buf[8192];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            std::string e = std::string(path) + ": cannot read the config file (" + strerror(errno) +
                            "); name a regular, readable TOML file";
            close(fd);
            return e;
        }
        if (n == 0) break;
        out.append(buf, (size_t)n);
        if (out.size() > (16u << 20)) {
            close(fd);
            return std::string(path) + ": larger than 16 MiB, so not a spillway config (a dataset or a "
                                       "binary?); name the TOML config file";
        }
    }
    close(fd);
    return std::nullopt;
}

std::optional<std::string> load_settings(Settings &s, const EnvLookup &env_lookup, const LoadOptions &opts) {
    auto env = [&](const char *name) -> const char * {
        const char *v = env_lookup ? env_lookup(name) : getenv(name);
        return v && *v ? v : nullptr;
    };
    if (const char *path = env("SPILLWAY_CONFIG")) {
        std::string read;
        std::string_view text;
        if (opts.config_text) {
            text = *opts.config_text;
        } else {
            if (auto err = read_config_file(path, read)) return err;
            text = read;
        }
        if (opts.text_out) opts.text_out->assign(text);
        s.source = path;
        if (auto err = parse_config_text(text, path, s)) return err;
    }
    if (opts.file_settings) *opts.file_settings = s;
    // The variables' rules are env_overrides.cpp's, which the front runs too.
    SimpleSettings view;
    view.source = s.source.c_str();
    view.threshold = s.threshold;
    view.threshold_origin = s.threshold_origin;
    view.policy = s.policy;
    view.log_level = s.log_level;
    view.spill_dir = s.spill_dir.c_str();
    view.spill_dir_given = s.spill_dir_given;
    view.stats_file = s.stats_file.c_str();
    view.stats_run = s.stats_run.c_str();
    // The longest message holds the source and one value, each written as one
    // line (a control character may become two).
    size_t cap = s.source.size() * 2 + 512;
    for (const char *name : kSettingVariables)
        if (const char *v = env(name)) cap += strlen(v) * 2;
    std::string message(cap, '\0');
    size_t needed = 0;
    auto lookup = [](void *ctx, const char *name) -> const char * {
        return (*static_cast<decltype(env) *>(ctx))(name);
    };
    if (!apply_env_overrides(&view, lookup, &env, message.data(), cap, &needed)) {
        message.resize(needed < cap ? needed : cap - 1);
        return message;
    }
    s.threshold = view.threshold;
    s.threshold_origin = view.threshold_origin;
    s.policy = view.policy;
    s.log_level = view.log_level;
    if (view.spill_dir != s.spill_dir.c_str()) s.spill_dir = view.spill_dir;
    s.spill_dir_given = view.spill_dir_given;
    if (view.stats_file != s.stats_file.c_str()) s.stats_file = view.stats_file;
    if (view.stats_run != s.stats_run.c_str()) s.stats_run = view.stats_run;
    Reader r(s.source);
    try {
        validate(s, r);
    } catch (const BadKey &e) {
        return e.message;
    }
    return std::nullopt;
}

std::string config_error_line(const std::string &message, bool continuing) {
    return kConfigErrorStart + message + (continuing ? kConfigErrorContinues : kConfigErrorStops);
}

static std::string quoted(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string describe_settings(const Settings &s) {
    std::ostringstream o;
    o << "# effective settings (source: " << s.source << ")\n";
    // Not given: left out, so that a config made of this text (`spillway
    // run` writes one) still lets the shim derive it (derived_threshold.h).
    if (s.threshold_origin == ThresholdOrigin::not_given)
        o << "# threshold: not given; the shim derives it from its memory limit (an eighth of it, "
             "16MiB to 64MiB; 64MiB without a limit)\n";
    else
        o << "threshold = " << quoted(format_size_exact(s.threshold)) << "\n";
    o << "policy = " << quoted(policy_name(s.policy)) << "\n\n";
    o << "[spill]\ndir = " << quoted(s.spill_dir) << "\nallow_tmpfs = "
      << (s.allow_tmpfs ? "true" : "false") << "\ndedicated_min = " << quoted(format_size_exact(s.dedicated_min))
      << "\n\n";
    o << "[memory]\nreserve = " << quoted(format_size_exact(s.memory_reserve)) << "\n\n";
    o << "[log]\nlevel = " << quoted(level_name(s.log_level)) << "\nfile = " << quoted(s.log_file) << "\n\n";
    o << "[stats]\nfile = " << quoted(s.stats_file) << "\n";
    // Only when set: the text stays what it was for every config without one.
    if (!s.stats_run.empty()) o << "run = " << quoted(s.stats_run) << "\n";
    o << "\n";
    o << "[profile]\nfile = " << quoted(s.profile_file) << "\nlearn = " << (s.learn ? "true" : "false")
      << "\nprobe = " << (s.learn_probe ? "true" : "false") << "\n\n";
    o << "[callsites]\nenabled = " << (s.callsites ? "true" : "false") << "\ndepth = " << s.callsite_depth
      << "\npython_depth = " << s.python_depth << "\n\n";
    o << "[shm]\nredirect = " << (s.shm_redirect ? "true" : "false") << "\nmin_size = "
      << quoted(format_size_exact(s.shm_min)) << "\n\n";
    // Only when off: the text stays what it was for every config without it.
    if (!s.fork_snapshot) o << "[fork]\nsnapshot = false\n\n";
    if (s.python_arenas != PythonArenas::auto_)
        o << "[python]\narenas = " << quoted(python_arenas_name(s.python_arenas)) << "\n\n";
    const TierSettings &t = s.tiering;
    o << "[tiering]\nenabled = " << (t.enabled ? "true" : "false") << "\nmin_size = "
      << quoted(format_size_exact(t.min_size)) << "\npromote_rate = " << quoted(format_size_exact(t.promote_rate))
      << "\ninterval_ms = " << t.interval_ms << "\ncooldown_ms = " << t.cooldown_ms
      << "\ndemote_margin = " << quoted(format_size_exact(t.demote_margin)) << "\nhorizon_ms = " << t.horizon_ms
      << "\n";
    for (const Rule &r : s.rules) {
        o << "\n[[rule]]\n";
        if (!r.match.empty()) o << "match = " << quoted(r.match) << "\n";
        if (!r.module.empty()) o << "module = " << quoted(r.module) << "\n";
        if (!r.python.empty()) o << "python = " << quoted(r.python) << "\n";
        o << "policy = " << quoted(policy_name(r.policy)) << "\n";
        if (r.access != Access::unknown) o << "access = " << quoted(access_name(r.access)) << "\n";
    }
    return o.str();
}

} // namespace spillway
