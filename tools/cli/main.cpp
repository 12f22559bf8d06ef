// main.cpp — `spillway`: dispatch to a subcommand, --help and --version.
//
// Invariant: this file only routes; what a subcommand does, and every
// message it prints, lives in that subcommand's own file. Exit codes are
// conventional: 0 ok, 1 failure, 2 usage, 78 a bad config (as the shim).
#include "cli.h"
#include "commands.h"

#include <iostream>
#include <string_view>

#ifndef SPILLWAY_VERSION
#define SPILLWAY_VERSION "unknown"
#endif

namespace {

using namespace spillway::cli;

struct Subcommand {
    std::string_view name;
    int (*entry)(const Args &);
    std::string_view summary;
};

constexpr Subcommand kSubcommands[] = {
    {"run", run_command, "run a command under the shim, then summarise what it spilled"},
    {"check", check_command, "validate a config and print the effective settings"},
    {"stat", stat_command, "list a spill directory: sizes, reserved, resident, who maps what"},
    {"release", release_command, "drop the page cache of spill files nobody maps"},
    {"sites", sites_command, "print a learned call-site profile as a table"},
    {"top", top_command, "live view of the processes under the shim and their cgroups"},
    {"report", report_command, "sum up a recording made with 'spillway run --record'"},
};

void print_help() {
    std::cout << "usage: spillway <command> [options]\n\n"
                 "Keeps large allocations of an unmodified program out of anonymous memory\n"
                 "(LD_PRELOAD allocator shim); this tool runs jobs under it and inspects them.\n\n"
                 "commands:\n";
    for (const Subcommand &c : kSubcommands)
        std::cout << "  " << c.name << std::string(10 - c.name.size(), ' ') << c.summary << "\n";
    std::cout << "\n'spillway <command> --help' describes one command; 'spillway --version' prints "
                 "the version.\nExit status: 0 ok, 1 failure, 2 usage error, 78 bad config; "
                 "'run' passes the command's own status through.\n";
}

} // namespace

int main(int argc, char **argv) {
    Args args(argv + 1, argv + argc);
    if (args.empty()) {
        print_help();
        return kExitUsage;
    }
    const std::string &first = args[0];
    if (first == "--help" || first == "-h" || first == "help") {
        if (first == "help" && args.size() > 1) {
            for (const Subcommand &c : kSubcommands)
                if (c.name == args[1]) return c.entry({"--help"});
            return usage_error("help", "no command named '" + args[1] +
                                           "'; commands are run, check, stat, release, sites, top, report");
        }
        print_help();
        return kExitOk;
    }
    if (first == "--version" || first == "-V") {
        std::cout << "spillway " << SPILLWAY_VERSION << "\n";
        return kExitOk;
    }
    for (const Subcommand &c : kSubcommands)
        if (c.name == first) return c.entry(Args(args.begin() + 1, args.end()));
    std::cerr << "spillway: no command named '" << first
              << "'; commands are run, check, stat, release, sites, top, report (see 'spillway --help')\n";
    return kExitUsage;
}
