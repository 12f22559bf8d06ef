// readahead_window.h — how much the kernel reads ahead on its own for a file:
// the read_ahead_kb of the block device under it, from sysfs.
//
// Why the shim needs it (measured, tests/bench/phases.sh and issue 12): a
// sequential pass over evicted pages of a MAP_SHARED file runs fastest under
// MADV_SEQUENTIAL when the device reads ahead megabytes (8 MiB: 2x the
// O_DIRECT floor, against a fifth of it with the sampler's MADV_WILLNEED,
// whose order-0 pages cost more than they save), but at 128 KiB the kernel's
// window is too small to keep the disk busy and the sampler's WILLNEED lead
// reads twice as fast. The sampler picks its method from this figure.
//
// Invariants: reads sysfs only (never writes a device setting: that is the
// administrator's); no allocation; safe on any thread.
//
// Since the prefetch worker (prefetch_worker.h) reads ahead of re-read
// streams at any setting (measured faster than MADV_SEQUENTIAL alone at
// 8 MiB too), the figure only picks the fallback for a stream the worker
// has no room for.
#pragma once

#include <cstdint>
#include <sys/types.h>

namespace spillway {

// From this window up, the kernel's own read-ahead (MADV_SEQUENTIAL) feeds a
// stream; below it the sampler reads ahead with MADV_WILLNEED.
constexpr uint64_t kKernelStreamMinKb = 1024;

// read_ahead_kb of the device holding the file open as `fd` (a partition's
// disk for a partition), or 0 when it cannot be known (a filesystem without
// a block device, sysfs not mounted).
uint64_t read_ahead_kb_of_fd(int fd);

// The same for a device number; `sysfs` is the sysfs mount ("/sys"), a
// parameter so unit tests can point it at a fake tree.
uint64_t read_ahead_kb_of_dev(dev_t dev, const char *sysfs);

} // namespace spillway
