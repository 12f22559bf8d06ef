// commands.h — the subcommands main.cpp dispatches to.
//
// Invariant: each entry point takes the arguments after its own name,
// prints its own --help, and returns the process exit status (it never
// calls exit itself, so main stays the only place the process ends).
#pragma once

#include <string>
#include <vector>

namespace spillway::cli {

using Args = std::vector<std::string>;

int run_command(const Args &args);     // run.cpp
int check_command(const Args &args);   // check.cpp
int stat_command(const Args &args);    // stat.cpp
int release_command(const Args &args); // release.cpp
int sites_command(const Args &args);   // sites.cpp
int top_command(const Args &args);     // top.cpp
int report_command(const Args &args);  // report.cpp

} // namespace spillway::cli
