// cli.h — what every subcommand shares: exit codes, one-line errors, and a
// small option reader.
//
// Invariant: every failure a user sees is ONE line on stderr that starts
// with "spillway <command>:" and says what to do next; the exit status says
// which kind of failure it was (kExitFailure vs kExitUsage vs the shim's
// kConfigErrorExit), so scripts never have to parse the text.
#pragma once

#include "size_parse.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spillway::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// "spillway CMD: WHAT" on stderr; returns kExitFailure.
int fail(std::string_view command, const std::string &what);
// "spillway CMD: WHAT (see 'spillway CMD --help')" on stderr; returns kExitUsage.
int usage_error(std::string_view command, const std::string &what);
// A note on stderr that is not a failure ("spillway CMD: warning: WHAT").
void warn(std::string_view command, const std::string &what);

// Reads options in order. Accepts "--name value", "--name=value" and
// "-x value"; "--" ends the options. Anything else is a positional argument.
class Options {
  public:
    Options(std::string_view command, std::vector<std::string> args);

    // True when the next argument is the flag `long_name` (or `short_name`).
    bool flag(std::string_view long_name, std::string_view short_name = {});
    // The value of option `long_name` when it is next; sets error() when the
    // value is missing.
    std::optional<std::string> value(std::string_view long_name, std::string_view short_name = {});

    bool done() const { return at_ >= args_.size(); }
    bool at_option() const; // next argument looks like an option (and is not "--")
    bool at_separator() const { return !done() && args_[at_] == "--"; }
    const std::string &peek() const { return args_[at_]; }
    std::string take() { return args_[at_++]; }
    // Everything not yet read (after skipping one "--" if it is next).
    std::vector<std::string> rest();

    const std::string &error() const { return error_; }

  private:
    std::string_view command_;
    std::vector<std::string> args_;
    size_t at_ = 0;
    std::string error_;
};

// Human units shared by every table: "64.0MiB", "512B" (size_parse.h).
using spillway::human_size;

} // namespace spillway::cli
