// verdict_cache.cpp — see verdict_cache.h.
#include "verdict_cache.h"

#include "settings_check.h"
#include "spill_dir_check.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace spillway {

namespace {

constexpr char kFileMagic[8] = {'S', 'P', 'W', 'V', 'R', 'D', '0', '1'};
constexpr uint32_t kEntryMagic = 0x56525053; // "SPRV"
constexpr size_t kMaxFile = 1 << 20;

// One entry: this head, then the text, then the three strings, each with
// its NUL, then stats.run with its NUL when it is not empty, padded to 8
// bytes. Native byte order: the file never leaves the machine, and another
// layout can only miss (the magics, the lengths). stats.run came later, in
// what was reserved and after what an older build reads: an entry without
// it is an older build's, whole, and an older build reads ours as one
// without it, so builds of either age used in turn keep each other's
// entries (verdict_cache_store says why that matters).
struct EntryHead {
    uint32_t magic;
    uint32_t total; // bytes of the entry, head and padding included
    EngineIdentity engine;
    uint64_t text_hash;
    uint64_t threshold;
    uint32_t text_len, spill_dir_len, log_file_len, stats_file_len; // without the NULs
    uint8_t policy, log_level, spill_dir_given, allow_tmpfs;
    uint8_t threshold_given; // the config names it (else the engine derives it: derived_threshold.h)
    uint8_t reserved;        // zero
    uint16_t stats_run_len;  // 0: none, and no string (an older build's entry is zero here)
};
static_assert(sizeof(EntryHead) == 88, "the head older builds read: add only into what is reserved");

size_t padded(size_t n) { return (n + 7) & ~size_t(7); }

uint64_t text_hash(const char *text, size_t len) { return fnv1a(0xcbf29ce484222325ull, text, len); }

// This user's own, and nobody else may write into it or replace it.
bool private_to_me(const struct stat &st, mode_t type, mode_t forbidden) {
    return (st.st_mode & S_IFMT) == type && st.st_uid == geteuid() && (st.st_mode & forbidden) == 0;
}

// The cache's directory, open, if it is private to this user; made when
// `create` and missing (only the last component: /var/tmp must be there).
int open_cache_dir(const char *path, bool create) {
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT && create && mkdir(path, 0700) == 0) fd = open(path, flags);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !private_to_me(st, S_IFDIR, S_IWGRP | S_IWOTH)) {
        close(fd);
        return -1;
    }
    return fd;
}

// The whole cache file (at `name`, relative to dir_fd), if it is private to
// this user and starts with the magic; *size its length. In memory from
// keep (never freed), else malloc'd.
char *read_cache(int dir_fd, const char *name, size_t *size, void *(*keep)(size_t) = nullptr) {
    // The system call itself: the front reads the cache before main, and
    // its own openat (front/preload.cpp) would first ask whether dir_fd is
    // under /dev/shm, which the cache never is.
    int fd = (int)syscall(SYS_openat, dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st;
    char *buf = nullptr;
    size_t got = 0;
    if (fstat(fd, &st) == 0 && private_to_me(st, S_IFREG, S_IRWXG | S_IRWXO) && st.st_size >= 8 &&
        (size_t)st.st_size <= kMaxFile &&
        (buf = (char *)(keep ? keep((size_t)st.st_size) : malloc((size_t)st.st_size)))) {
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += (size_t)n;
        }
    }
    close(fd);
    if (buf && (got < 8 || memcmp(buf, kFileMagic, 8) != 0)) {
        if (!keep) free(buf);
        buf = nullptr;
    }
    *size = got;
    return buf;
}

// The entry at data[at..size), checked whole; nullptr when it is not one.
const EntryHead *entry_at(const char *data, size_t size, size_t at) {
    if (size - at < sizeof(EntryHead)) return nullptr;
    const EntryHead *h = (const EntryHead *)(data + at); // 8-aligned: malloc'd, entries padded
    if (h->magic != kEntryMagic || h->total % 8 || h->total > size - at || h->policy > 3 || h->log_level > 3)
        return nullptr;
    uint64_t need = sizeof(EntryHead) + (uint64_t)h->text_len + h->spill_dir_len + 1 + h->log_file_len + 1 +
                    h->stats_file_len + 1 + (h->stats_run_len ? h->stats_run_len + 1u : 0u);
    if (need > h->total) return nullptr;
    const char *s = (const char *)(h + 1) + h->text_len;
    uint64_t stats_file_end = (uint64_t)h->spill_dir_len + 1 + h->log_file_len + 1 + h->stats_file_len;
    if (s[h->spill_dir_len] || s[h->spill_dir_len + 1 + h->log_file_len] || s[stats_file_end] ||
        (h->stats_run_len && s[stats_file_end + 1 + h->stats_run_len]))
        return nullptr;
    return h;
}

bool same_engine(const EngineIdentity &a, const EngineIdentity &b) {
    return a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime_sec == b.mtime_sec &&
           a.mtime_nsec == b.mtime_nsec;
}

bool entry_matches(const EntryHead *h, const EngineIdentity &engine, const char *text, size_t len,
                   uint64_t hash) {
    return same_engine(h->engine, engine) && h->text_len == len && h->text_hash == hash &&
           memcmp(h + 1, text, len) == 0;
}

// A name no other writer picks: random, else the pid and the clock.
void temporary_name(char *out, size_t cap) {
    unsigned char r[8];
    unsigned long long v;
    if (getrandom(r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) {
        memcpy(&v, r, sizeof v);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = ((unsigned long long)getpid() << 32) ^ (unsigned long long)ts.tv_nsec ^ (unsigned long long)ts.tv_sec;
    }
    snprintf(out, cap, ".spillway-tmp-verdicts-%016llx", v);
}

bool write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

} // namespace

bool engine_identity(const char *engine_path, EngineIdentity *out) {
    struct stat st;
    if (stat(engine_path, &st) != 0) return false;
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    out->size = (uint64_t)st.st_size;
    out->mtime_sec = (uint64_t)st.st_mtim.tv_sec;
    out->mtime_nsec = (uint64_t)st.st_mtim.tv_nsec;
    return true;
}

void verdict_cache_dir(char *out, size_t cap) { default_spill_dir_text(out, cap); }

bool verdict_cache_lookup(const char *dir_path, const EngineIdentity &engine, const char *text, size_t len,
                          ConfigVerdict *out, void **storage, void *(*keep)(size_t)) {
    *storage = nullptr;
    if (len > kVerdictCacheMaxText) return false;
    // Read in every process that names a config, before main: the
    // directory is checked by lstat and the file opened by its whole path,
    // two system calls fewer than opening the directory. The directory
    // can only be replaced between the two by its owner (this user) or,
    // where /var/tmp lacks its sticky bit, by another user; and then only
    // a file of this user's own, private, can be read (read_cache): one
    // only this user's engines wrote.
    // A short buffer, built by hand: the front looks up before main, where
    // a PATH_MAX frame put its calls on stack pages the loader had not
    // touched, and printf's first call faulted its code in. The front's
    // directory is the default one (verdict_cache_dir: a few dozen bytes);
    // a longer one only misses.
    char file[256];
    size_t dir_len = strlen(dir_path);
    if (dir_len + 1 + sizeof kVerdictCacheName > sizeof file) return false;
    memcpy(file, dir_path, dir_len);
    file[dir_len] = '/';
    memcpy(file + dir_len + 1, kVerdictCacheName, sizeof kVerdictCacheName);
    struct stat st;
    if (lstat(dir_path, &st) != 0 || !private_to_me(st, S_IFDIR, S_IWGRP | S_IWOTH)) return false;
    size_t size = 0;
    char *data = read_cache(AT_FDCWD, file, &size, keep);
    if (!data) return false;
    uint64_t hash = text_hash(text, len);
    for (size_t at = 8; const EntryHead *h = entry_at(data, size, at); at += h->total) {
        if (!entry_matches(h, engine, text, len, hash)) continue;
        const char *s = (const char *)(h + 1) + h->text_len;
        out->threshold = h->threshold;
        out->threshold_given = h->threshold_given != 0;
        out->policy = (Policy)h->policy;
        out->log_level = (LogLevel)h->log_level;
        out->spill_dir_given = h->spill_dir_given != 0;
        out->allow_tmpfs = h->allow_tmpfs != 0;
        out->spill_dir = s;
        out->log_file = s + h->spill_dir_len + 1;
        out->stats_file = out->log_file + h->log_file_len + 1;
        out->stats_run = h->stats_run_len ? out->stats_file + h->stats_file_len + 1 : "";
        *storage = keep ? nullptr : data;
        return true;
    }
    if (!keep) free(data);
    return false;
}

void verdict_cache_store(const char *dir_path, const EngineIdentity &engine, const char *text, size_t len,
                         const ConfigVerdict &v) {
    if (len > kVerdictCacheMaxText) return;
    size_t dir_len = strlen(v.spill_dir), log_len = strlen(v.log_file), stats_len = strlen(v.stats_file);
    size_t run_len = strlen(v.stats_run); // at most kStatsRunMax (256): the parser's rule
    if (dir_len > PATH_MAX || log_len > PATH_MAX || stats_len > PATH_MAX || run_len > UINT16_MAX) return;
    int dir = open_cache_dir(dir_path, true);
    if (dir < 0) return;
    size_t old_size = 0;
    char *old = read_cache(dir, kVerdictCacheName, &old_size);

    size_t total = padded(sizeof(EntryHead) + len + dir_len + 1 + log_len + 1 + stats_len + 1 + (run_len ? run_len + 1 : 0));
    char *entry = (char *)calloc(1, total);
    if (!entry) {
        free(old);
        close(dir);
        return;
    }
    EntryHead head{};
    head.magic = kEntryMagic;
    head.total = (uint32_t)total;
    head.engine = engine;
    head.text_hash = text_hash(text, len);
    head.threshold = v.threshold;
    head.threshold_given = v.threshold_given ? 1 : 0;
    head.text_len = (uint32_t)len;
    head.spill_dir_len = (uint32_t)dir_len;
    head.log_file_len = (uint32_t)log_len;
    head.stats_file_len = (uint32_t)stats_len;
    head.stats_run_len = (uint16_t)run_len;
    head.policy = (uint8_t)v.policy;
    head.log_level = (uint8_t)v.log_level;
    head.spill_dir_given = v.spill_dir_given;
    head.allow_tmpfs = v.allow_tmpfs;
    memcpy(entry, &head, sizeof head);
    char *p = entry + sizeof head;
    memcpy(p, text, len);
    memcpy(p += len, v.spill_dir, dir_len + 1);
    memcpy(p += dir_len + 1, v.log_file, log_len + 1);
    memcpy(p += log_len + 1, v.stats_file, stats_len + 1);
    if (run_len) memcpy(p += stats_len + 1, v.stats_run, run_len + 1);

    // The new entry first, then the newest others, whatever engine judged
    // them: two installed builds used in turn (a package and a wheel's
    // copy, two build trees) would otherwise evict each other's verdicts at
    // every store, and every process of both would load its engine before
    // main (measured: startup_modes.sh with two builds, config mode 2.89x
    // bare mimalloc against 1.16x with one). A gone engine's entries only
    // age out.
    char name[64];
    temporary_name(name, sizeof name);
    int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write_all(fd, kFileMagic, sizeof kFileMagic) && write_all(fd, entry, total);
    size_t at = 8;
    for (int kept = 1; ok && old && kept < kVerdictCacheEntries;) {
        const EntryHead *h = entry_at(old, old_size, at);
        if (!h) break;
        at += h->total;
        if (entry_matches(h, engine, text, len, head.text_hash)) continue; // replaced by the new one
        ok = write_all(fd, (const char *)h, h->total);
        kept++;
    }
    if (fd >= 0) ok = close(fd) == 0 && ok;
    if (ok) ok = renameat(dir, name, dir, kVerdictCacheName) == 0;
    if (!ok && fd >= 0) unlinkat(dir, name, 0);
    free(entry);
    free(old);
    close(dir);
}

} // namespace spillway
