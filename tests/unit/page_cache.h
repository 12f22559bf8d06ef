// page_cache.h — how many pages of a file range are in the page cache, as
// the unit tests ask it: mincore through a mapping of their own, so the
// answer is the cache's, not any process's page tables.
#pragma once

#include <catch2/catch.hpp>
#include <cstddef>
#include <sys/mman.h>
#include <sys/types.h>
#include <vector>

namespace test {

// Pages of fd's [off, off+len) in the page cache; off page-aligned.
inline size_t cached_pages(int fd, off_t off, size_t len) {
    void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, off);
    REQUIRE(m != MAP_FAILED);
    std::vector<unsigned char> in((len + 4095) / 4096);
    REQUIRE(mincore(m, len, in.data()) == 0);
    munmap(m, len);
    size_t n = 0;
    for (unsigned char c : in) n += c & 1;
    return n;
}

} // namespace test
