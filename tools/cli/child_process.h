// child_process.h — run one command as our child and report its fate the
// way a shell would.
//
// Invariants:
//  * The exit status passes through unchanged; death by signal N becomes
//    128+N; a command that cannot be found is 127, one that cannot be
//    executed 126 (the shell's conventions, so scripts keep working).
//  * SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to us are forwarded to the
//    child (docker stop and job schedulers signal only the top process).
//    SIGINT and SIGQUIT are ignored while the child runs: the terminal
//    already delivers them to the child's process group, and forwarding
//    would deliver them twice. The child starts with the signal dispositions
//    we were started with.
//  * While waiting we reap every child, not only ours, so the tool can be
//    a container's PID 1 without accumulating zombies.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace spillway::cli {

struct ChildOutcome {
    int status = 0;         // what `spillway run` exits with
    int signal = 0;         // the signal that killed the child, or 0
    int exec_error = 0;     // errno of a failed exec, or 0
};

// argv[0] is looked up in PATH; env is the child's whole environment.
// on_started, when given, is called with the child's pid once it exists
// (before exec is known to have worked), from this thread.
ChildOutcome run_child(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                       const std::function<void(pid_t)> &on_started = {});

} // namespace spillway::cli
