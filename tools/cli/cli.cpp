// cli.cpp — see cli.h.
#include "cli.h"

#include <cstdio>
#include <iostream>

namespace spillway::cli {

int fail(std::string_view command, const std::string &what) {
    std::cerr << "spillway " << command << ": " << what << "\n";
    return kExitFailure;
}

int usage_error(std::string_view command, const std::string &what) {
    std::cerr << "spillway " << command << ": " << what << " (see 'spillway " << command
              << " --help')\n";
    return kExitUsage;
}

void warn(std::string_view command, const std::string &what) {
    std::cerr << "spillway " << command << ": warning: " << what << "\n";
}

Options::Options(std::string_view command, std::vector<std::string> args)
    : command_(command), args_(std::move(args)) {}

bool Options::at_option() const {
    if (done()) return false;
    const std::string &a = args_[at_];
    return a.size() > 1 && a[0] == '-' && a != "--";
}

static bool names_option(const std::string &arg, std::string_view long_name, std::string_view short_name,
                         std::optional<std::string> *inline_value) {
    if (!short_name.empty() && arg == short_name) return true;
    if (arg == long_name) return true;
    if (inline_value && arg.size() > long_name.size() && arg.compare(0, long_name.size(), long_name) == 0 &&
        arg[long_name.size()] == '=') {
        *inline_value = arg.substr(long_name.size() + 1);
        return true;
    }
    return false;
}

bool Options::flag(std::string_view long_name, std::string_view short_name) {
    if (done() || !names_option(args_[at_], long_name, short_name, nullptr)) return false;
    at_++;
    return true;
}

std::optional<std::string> Options::value(std::string_view long_name, std::string_view short_name) {
    if (done()) return std::nullopt;
    std::optional<std::string> inline_value;
    if (!names_option(args_[at_], long_name, short_name, &inline_value)) return std::nullopt;
    at_++;
    if (inline_value) return inline_value;
    if (done()) {
        error_ = "option " + args_[at_ - 1] + " needs a value";
        return std::string();
    }
    return args_[at_++];
}

std::vector<std::string> Options::rest() {
    if (at_separator()) at_++;
    std::vector<std::string> out(args_.begin() + (long)at_, args_.end());
    at_ = args_.size();
    return out;
}

} // namespace spillway::cli
