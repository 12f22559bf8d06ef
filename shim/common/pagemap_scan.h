// pagemap_scan.h — the PAGEMAP_SCAN ioctl on /proc/PID/pagemap (Linux 6.7),
// which Debian 12's headers predate: the kernel walks a range's page table
// and returns runs of pages by category (present, file, written, ...),
// ~100x cheaper than reading 8 bytes of pagemap per page.
//
// Invariant: the one copy of its ABI (struct layouts, ioctl number, the
// category and flag bits, from <linux/fs.h> of 6.7) in the project, header
// only and libc only, so the engine (access/, os/) and the `spillway` tool
// share it. Callers fall back to reading pagemap entries (kEntry* below)
// when the ioctl fails with ENOTTY or EINVAL (a kernel before 6.7).
#pragma once

#include <cstdint>
#include <linux/ioctl.h>

namespace spillway::pagemap {

// struct page_region: [start, end) and the categories of its pages.
struct PageRegion {
    uint64_t start, end, categories;
};
// struct pm_scan_arg.
struct ScanArg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
constexpr unsigned long kScanIoctl = _IOWR('f', 16, ScanArg); // PAGEMAP_SCAN

// Page categories (PAGE_IS_*).
constexpr uint64_t kPageIsWritten = 1u << 1;
constexpr uint64_t kPageIsFile = 1u << 2; // present and not anonymous: page cache, shmem/memfd
constexpr uint64_t kPageIsPresent = 1u << 3;
constexpr uint64_t kPageIsSwapped = 1u << 4; // a swap entry: swapped out, migrating, or a userfaultfd marker
constexpr uint64_t kPageIsPfnZero = 1u << 5; // the shared zero page: no memory of its own, not in smaps Rss
constexpr uint64_t kPageIsHuge = 1u << 6;

// Flags (PM_SCAN_*).
constexpr uint64_t kScanWpMatching = 1u << 0;
constexpr uint64_t kScanCheckWpAsync = 1u << 1;

// The 8-byte entry per page of reading /proc/PID/pagemap (the fallback).
constexpr uint64_t kEntryPresent = 1ull << 63;
constexpr uint64_t kEntryFile = 1ull << 61; // file page or shared anonymous (shmem, memfd)

} // namespace spillway::pagemap
