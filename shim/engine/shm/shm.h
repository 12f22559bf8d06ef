// shm.h — large POSIX shared-memory segments live in reserved spill files.
//
// Why: share_memory_() and forked DataLoader workers copy a buffer into a
// fresh /dev/shm file: for that moment it exists twice, both copies
// unreclaimable, and Docker's /dev/shm is 64 MiB (SIGBUS past it).
//
// How: opening a /dev/shm file with O_CREAT happens as asked (so O_EXCL,
// the fd number and the name behave exactly as before) and the descriptor
// is remembered. When ftruncate/fallocate gives it a size at or above
// [shm] min_size, a named spill file is created in the spill directory,
// reserved with fallocate (mandatory: no sparse segment that SIGBUSes when
// the disk fills), and moved onto the same descriptor number with dup3. The
// empty /dev/shm file stays as the name; opening that name later (this or
// another process under the shim) opens the spill file; unlinking it
// unlinks both. If the spill filesystem cannot take it, the segment stays
// in /dev/shm exactly as the program asked, and the reason is logged.
//
// Invariants: paths outside /dev/shm, small segments and everything when
// [shm] redirect = false are untouched; a remembered descriptor is trusted
// only while fstat still shows the same file (descriptor numbers are reused).
#pragma once

#include "config.h"

#include <sys/types.h>

namespace spillway {

void shm_init(const Settings &s);
bool shm_active();

// Each returns what the libc call would; the real work is done by raw syscalls.
int shm_open_path(const char *path, int flags, mode_t mode, int dirfd);
int shm_resize(int fd, off_t size, bool truncate_call, int mode, off_t offset);
int shm_unlink_path(const char *path, int dirfd, int flags);

// For tests: the spill-directory name a /dev/shm name is redirected to.
std::string shm_redirect_name(const char *shm_path);

} // namespace spillway
