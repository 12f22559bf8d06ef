// engine_calls.h — what the front asks of the engine: the requests mimalloc
// does not serve, and the /dev/shm calls (preload.cpp, cxx_new.cpp). Each
// forwards through the engine's table (abi/engine_api.h) and answers as a
// shim that is not routing would when no engine routes. The names are the
// front's own: the engine's functions behind the table (engine/large/
// large.h, engine/shm/shm.h) are never declared here.
//
// Invariants:
//  * A call that needs the engine starts it (engine_loader.h says when that
//    is); a call that can only concern what the engine already made (free,
//    realloc and size of an arena pointer, resizing a tracked descriptor)
//    never starts it.
//  * Until the engine has started, open/openat/unlink of anything that is
//    not a /dev/shm file is the bare system call, as the engine's own code
//    does while shared-memory redirection is off.
#pragma once

#include <cstddef>
#include <sys/types.h>

namespace spillway {

// A request at or above the threshold, or with an alignment mimalloc does
// not serve: the engine's region, or a mimalloc block when no engine
// routes. nullptr with errno set when neither can be had.
void *engine_allocate(size_t size, size_t align, bool zero);
// p is an arena pointer (arena::owns): the engine's to free, resize, measure.
void engine_free(void *p);
void *engine_realloc(void *p, size_t size);
size_t engine_usable_size(const void *p);

// open/openat (dirfd AT_FDCWD for open), ftruncate/fallocate and unlink/
// unlinkat: each returns what the libc call would.
int engine_shm_open(const char *path, int flags, mode_t mode, int dirfd);
int engine_shm_resize(int fd, off_t size, bool truncate_call, int mode, off_t offset);
int engine_shm_unlink(const char *path, int dirfd, int flags);

} // namespace spillway
