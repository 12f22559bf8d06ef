// uffd.h — userfaultfd(2) and the PAGEMAP_SCAN ioctl, as a move of a live
// region uses them (move_tracked.h): what this process may use, and thin
// calls that return 0 or -errno.
//
// Debian 12's headers predate both interfaces' newer parts (asynchronous
// write protection, Linux 6.7; PAGEMAP_SCAN, 6.7): this file is the one copy
// of their ABI in the project (from <linux/userfaultfd.h> and <linux/fs.h>
// of 6.7).
//
// Invariant: the probe runs once per process (the first move asks), and
// says once in the log what a weaker answer means; every descriptor made
// here is close-on-exec and above stdio, and is the caller's to close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spillway::uffd {

// What a move may rely on here.
enum class Level : uint8_t {
    none,      // no userfaultfd (seccomp, kernel before 6.7, no PAGEMAP_SCAN)
    user_only, // userfaultfd for faults of user code only (vm.unprivileged_userfaultfd=0
               // without CAP_SYS_PTRACE): writes are tracked, kernel stores cannot wait
    full,      // kernel stores (read(2) into a buffer) wait too
};
Level level();
const char *level_name(Level l);
// Tests: forget the probe's answer (a seccomp filter installed since).
void forget_level();

// The features a move's context asks for: asynchronous write protection
// that also covers pages never touched, shmem's minor and missing faults,
// and remap events (their write-protect bits travel with pages mremap moves).
constexpr uint64_t kFeatureEventRemap = 1u << 2;
constexpr uint64_t kFeatureMissingShmem = 1u << 5;
constexpr uint64_t kFeatureMinorShmem = 1u << 10;
constexpr uint64_t kFeatureWpShmem = 1u << 12; // UFFD_FEATURE_WP_HUGETLBFS_SHMEM
constexpr uint64_t kFeatureWpUnpopulated = 1u << 13;
constexpr uint64_t kFeatureWpAsync = 1u << 15;

constexpr uint64_t kModeMissing = 1u << 0;
constexpr uint64_t kModeWp = 1u << 1;
constexpr uint64_t kModeMinor = 1u << 2;

// A new context with these features (user_only: UFFD_USER_MODE_ONLY),
// non-blocking; the descriptor, or -errno.
int open_context(uint64_t features, bool user_only);
int register_range(int fd, uintptr_t at, size_t len, uint64_t modes);
// Also wakes the threads waiting on a fault in the range, every one of them
// (they retry it as an ordinary fault): the kernel's own wake can miss a
// fault that is being handled meanwhile (uffd.cpp says why).
int unregister_range(int fd, uintptr_t at, size_t len);
int write_protect(int fd, uintptr_t at, size_t len);
// Wakes threads waiting on a fault in [at, at+len) (they retry it).
int wake(int fd, uintptr_t at, size_t len);

// Reads pending messages without blocking; appends the addresses of page
// faults to faults and counts remap events in *remaps (reading an event is
// what lets the mremap that sent it return). Returns the number of
// messages read, or -errno (-EAGAIN: none).
int read_messages(int fd, std::vector<uintptr_t> *faults, unsigned *remaps = nullptr);

// A page range [start, end) that PAGEMAP_SCAN reported.
struct Range {
    uintptr_t start, end;
};
// /proc/self/pagemap, opened for a move (above stdio), or -errno.
int open_pagemap();
// Pages of [at, at+len) written since they were last write-protected
// (asynchronously), appended to out; with reprotect, each is
// write-protected again in the same step, so a write that follows is found
// by the next scan. 0 or -errno (-EPERM: a page of the range is not under
// asynchronous write protection).
// A page written and then zapped (reclaim to swap or MADV_PAGEOUT of a
// memfd or file page, MADV_DONTNEED: the kernel leaves a write-protect
// marker only on a page still protected) has no entry; it is reported
// written too (fs/proc/task_mmu.c: every entry but a protected page or a
// marker is written, in the fast path these masks select, Linux 6.7 on), so
// the caller reads it again: through the file, a fault, which the range
// must be able to take (move_tracked.cpp last_step). Checked on each kernel
// by test_move_tracked.cpp; docs/moves.md has the kernel's paths.
// entries_only: the range was started by protect_listing_copies (no
// markers): a page with no entry is not reported (the kernel would: to it a
// page with neither entry nor marker is written), being a file page never
// mapped since, or one the program dropped (its bytes are the file's).
int scan_written(int pagemap, uintptr_t at, size_t len, bool reprotect, std::vector<Range> &out,
                 bool entries_only = false);

// Starts tracking a range of a private file mapping, registered for
// asynchronous write protection, and says which of its pages are this
// process's own copies, in one step that cannot miss a copy: under each
// page table's lock, every page with an entry (present or swapped) is
// reported as it was and write-protected, so a copy made before is listed
// and one made after is written (scan_written). Appends to `copies` the
// runs of copies: present and not a file page, or swapped (an anonymous
// page: real swap or migration; the range had no markers yet). A page with
// no entry is left alone: it is the file's (a store to it later makes a
// copy, which scan_written reports; marking it instead would make it
// indistinguishable from a swapped copy). 0 or -errno.
int protect_listing_copies(int pagemap, uintptr_t at, size_t len, std::vector<Range> &copies);

} // namespace spillway::uffd
