// background_thread.cpp — see background_thread.h.
#include "os/background_thread.h"

#include <csignal>
#include <pthread.h>

namespace spillway {

bool start_background_thread(void *(*main)(void *), const char *name, size_t stack_bytes) {
    // The new thread inherits the mask in force at pthread_create.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, stack_bytes);
    pthread_t tid;
    bool ok = pthread_create(&tid, &attr, main, nullptr) == 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (ok) pthread_setname_np(tid, name);
    return ok;
}

} // namespace spillway
