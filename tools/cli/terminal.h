// terminal.h — the little `spillway top` needs from a terminal, with no
// curses: keys without Enter, no echo, a hidden cursor, and all of it put
// back however the program ends (q, Ctrl-C, SIGTERM, SIGHUP).
//
// Invariant: after Terminal::restore() (also run by the destructor) the
// terminal's settings are exactly those found at begin(); signals that
// would end the program only set a flag that wait_key() reports, so the
// restore always runs on the normal return path.
#pragma once

#include <termios.h>

namespace spillway::cli {

class Terminal {
  public:
    // Takes keys from stdin when it is a terminal; catches SIGINT, SIGTERM, SIGHUP.
    void begin(bool hide_cursor);
    void restore();
    ~Terminal() { restore(); }

    // Waits up to timeout_ms for a key: the key, kTimeout, or kStop (a
    // terminating signal arrived). Without a terminal on stdin it only waits.
    static constexpr int kTimeout = -1, kStop = -2;
    int wait_key(int timeout_ms);

  private:
    bool raw_ = false, cursor_hidden_ = false, input_ = false, active_ = false;
    struct termios saved_ {};
};

} // namespace spillway::cli
