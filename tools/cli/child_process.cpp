// child_process.cpp — see child_process.h.
#include "child_process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace spillway::cli {

namespace {

constexpr int kForwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
constexpr int kIgnoredWhileWaiting[] = {SIGINT, SIGQUIT};

volatile sig_atomic_t g_child_pid = 0;

void forward_signal(int sig) {
    pid_t child = g_child_pid;
    if (child > 0) kill(child, sig); // never 0: kill(0) would signal our whole group
}

std::vector<char *> c_strings(const std::vector<std::string> &v) {
    std::vector<char *> out;
    for (const std::string &s : v) out.push_back(const_cast<char *>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

} // namespace

ChildOutcome run_child(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                       const std::function<void(pid_t)> &on_started) {
    ChildOutcome outcome;
    std::vector<char *> child_argv = c_strings(argv), child_env = c_strings(env);

    // A close-on-exec pipe tells the parent whether exec worked: it reads
    // EOF on success, the errno otherwise.
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        outcome.exec_error = errno;
        outcome.status = 126;
        return outcome;
    }

    // Block the forwarded signals until g_child_pid is set, so none arrives
    // with nobody to forward it to.
    sigset_t forwarded, previous_mask;
    sigemptyset(&forwarded);
    for (int sig : kForwarded) sigaddset(&forwarded, sig);
    sigprocmask(SIG_BLOCK, &forwarded, &previous_mask);

    struct sigaction forward = {}, ignore = {}, saved[NSIG] = {};
    forward.sa_handler = forward_signal;
    forward.sa_flags = SA_RESTART;
    sigemptyset(&forward.sa_mask);
    ignore.sa_handler = SIG_IGN;
    for (int sig : kForwarded) sigaction(sig, &forward, &saved[sig]);
    for (int sig : kIgnoredWhileWaiting) sigaction(sig, &ignore, &saved[sig]);

    pid_t pid = fork();
    if (pid == 0) {
        for (int sig : kForwarded) sigaction(sig, &saved[sig], nullptr);
        for (int sig : kIgnoredWhileWaiting) sigaction(sig, &saved[sig], nullptr);
        sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
        close(exec_pipe[0]);
        execvpe(child_argv[0], child_argv.data(), child_env.data());
        int err = errno;
        ssize_t ignored = write(exec_pipe[1], &err, sizeof err);
        (void)ignored;
        _exit(err == ENOENT ? 127 : 126);
    }
    close(exec_pipe[1]);
    if (pid < 0) {
        outcome.exec_error = errno;
        outcome.status = 126;
    } else {
        g_child_pid = pid;
    }
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);

    if (pid > 0) {
        if (on_started) on_started(pid);
        int err = 0;
        ssize_t n;
        while ((n = read(exec_pipe[0], &err, sizeof err)) < 0 && errno == EINTR) {
        }
        if (n == (ssize_t)sizeof err) outcome.exec_error = err;
        for (;;) {
            int status = 0;
            pid_t done = waitpid(-1, &status, 0);
            if (done < 0 && errno == EINTR) continue;
            if (done < 0) break; // ECHILD: cannot happen while ours lives
            if (done != pid) continue; // an orphan we adopted as PID 1
            if (WIFEXITED(status)) {
                outcome.status = WEXITSTATUS(status);
            } else if (WIFSIGNALED(status)) {
                outcome.signal = WTERMSIG(status);
                outcome.status = 128 + outcome.signal;
            }
            break;
        }
        g_child_pid = 0;
    }
    close(exec_pipe[0]);
    for (int sig : kForwarded) sigaction(sig, &saved[sig], nullptr);
    for (int sig : kIgnoredWhileWaiting) sigaction(sig, &saved[sig], nullptr);
    return outcome;
}

} // namespace spillway::cli
