// terminal.cpp — see terminal.h.
#include "terminal.h"

#include <cerrno>
#include <csignal>
#include <initializer_list>
#include <poll.h>
#include <unistd.h>

namespace spillway::cli {

namespace {

volatile sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) { g_stop_signal = sig; }

void write_all(const char *s, size_t n) {
    while (n) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

} // namespace

void Terminal::begin(bool hide_cursor) {
    active_ = true;
    struct sigaction sa = {};
    sa.sa_handler = on_stop_signal; // no SA_RESTART: poll() returns EINTR at once
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
    input_ = isatty(STDIN_FILENO);
    if (input_ && tcgetattr(STDIN_FILENO, &saved_) == 0) {
        struct termios raw = saved_;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); // ISIG stays: Ctrl-C is still SIGINT
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        raw_ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0;
    }
    if (hide_cursor) {
        write_all("\033[?25l", 6);
        cursor_hidden_ = true;
    }
}

void Terminal::restore() {
    if (!active_) return;
    active_ = false;
    if (raw_) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
    raw_ = false;
    if (cursor_hidden_) write_all("\033[?25h", 6);
    cursor_hidden_ = false;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
}

int Terminal::wait_key(int timeout_ms) {
    if (g_stop_signal) return kStop;
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    int n = poll(&p, input_ ? 1 : 0, timeout_ms);
    if (g_stop_signal) return kStop;
    if (n <= 0) return kTimeout; // timeout, or EINTR from a signal we do not stop for
    unsigned char c;
    ssize_t r = read(STDIN_FILENO, &c, 1);
    if (r == 1) return c;
    if (r == 0) input_ = false; // stdin ended: keep refreshing, stop reading it
    return kTimeout;
}

} // namespace spillway::cli
