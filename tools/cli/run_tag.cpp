// run_tag.cpp — see run_tag.h.
#include "run_tag.h"

#include "stats_run.h"

#include <cerrno>
#include <cstring>
#include <sys/random.h>

namespace spillway::cli {

RunTag new_run_tag(const std::string &given) {
    RunTag out;
    unsigned char bits[16];
    size_t got = 0;
    while (got < sizeof bits) {
        ssize_t n = getrandom(bits + got, sizeof bits - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            // Never a guessable tag: another job could then carry it.
            out.error = std::string("cannot make this run's tag: getrandom failed (") + strerror(errno) +
                        "); check the kernel's random source (/dev/urandom) is available to this process";
            return out;
        }
        got += (size_t)n;
    }
    static const char kHex[] = "0123456789abcdef";
    std::string fresh;
    for (unsigned char b : bits) {
        fresh += kHex[b >> 4];
        fresh += kHex[b & 15];
    }
    std::string tag = given.empty() ? fresh : given + "/" + fresh;
    if (tag.size() > kStatsRunMax) {
        out.error = "the stats run tag \"" + given + "\" leaves no room for this run's own (" +
                    std::to_string(kStatsRunMax) + " characters at most): shorten [stats] run, or unset "
                    "SPILLWAY_STATS_RUN (set by an outer spillway run nested too deep)";
        return out;
    }
    out.tag = tag;
    return out;
}

bool tag_is_of_run(const std::string &line_tag, const std::string &run_tag) {
    if (run_tag.empty()) return false;
    if (line_tag == run_tag) return true;
    return line_tag.size() > run_tag.size() && line_tag.compare(0, run_tag.size(), run_tag) == 0 &&
           line_tag[run_tag.size()] == '/';
}

} // namespace spillway::cli
