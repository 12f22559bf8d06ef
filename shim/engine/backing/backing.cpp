// backing.cpp — see backing.h.
#include "backing/backing.h"

#include "registry/arena.h"
#include "fd_policy.h"
#include "log.h"
#include "log_repeats.h"
#include "backing/reaper.h"
#include "spilldir.h"
#include "stats_format.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/falloc.h>
#include <mimalloc.h>
#include <atomic>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

namespace {
// A pointer, not an object: the shim starts in a constructor that can run
// before this file's static initialisers.
// Replaced (never freed) once, when a private directory takes the place of
// a refused one: readers may hold the old one.
std::atomic<SpillDir *> g_dir{nullptr};
bool g_private_pending = false; // create a private directory at the first spill
bool g_allow_tmpfs = false;
pid_t g_private_creator = 0;    // removes the (empty) private directory at exit
uint64_t g_dedicated_min = 256ull << 20;
std::mutex g_pool_lock; // creating pools and growing the memfd's size
std::mutex g_dir_lock;  // opening the spill directory (again, once it was removed)
std::atomic<int> g_dir_fd{-1};
SpillFile *g_disk_pool = nullptr;
SpillFile *g_memory_pool = nullptr;

SpillFile *new_spill_file(int fd, Backing kind, bool pool) {
    void *mem = mi_malloc(sizeof(SpillFile));
    if (!mem) return nullptr;
    SpillFile *f = new (mem) SpillFile();
    f->fd = fd;
    f->kind = kind;
    f->pool = pool;
    return f;
}

// fallocate, retried on EINTR. On failure the range is punched again: ext4
// keeps a partial allocation after ENOSPC, which would leak disk space.
int reserve(int fd, uint64_t off, size_t len) {
    int rc;
    do rc = fallocate(fd, 0, (off_t)off, (off_t)len);
    while (rc != 0 && errno == EINTR);
    if (rc == 0) return 0;
    int err = errno;
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
    return err;
}

int map_shared(uintptr_t addr, size_t len, int fd, uint64_t off) {
    void *p = mmap((void *)addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)off);
    return p == MAP_FAILED ? errno : 0;
}

SpillFile *disk_pool(int &err) {
    std::lock_guard<std::mutex> guard(g_pool_lock);
    if (!g_disk_pool) {
        int fd = create_unnamed_file(spill_dir_fd());
        if (fd < 0) {
            err = -fd;
            return nullptr;
        }
        make_spill_file_write_in_place(fd);
        g_disk_pool = new_spill_file(fd, Backing::disk, true);
        if (!g_disk_pool) {
            close(fd);
            err = ENOMEM;
        }
    }
    return g_disk_pool;
}

SpillFile *memory_pool(int &err) {
    std::lock_guard<std::mutex> guard(g_pool_lock);
    if (!g_memory_pool) {
        int fd = move_high(memfd_create("spillway", MFD_CLOEXEC));
        if (fd < 0) {
            err = errno;
            return nullptr;
        }
        g_memory_pool = new_spill_file(fd, Backing::memory, true);
        if (!g_memory_pool) {
            close(fd);
            err = ENOMEM;
        }
    }
    return g_memory_pool;
}

// memfd bytes are not reserved (that would allocate RAM now); the file only
// has to be long enough that the mapping never reaches past its end.
int ensure_memfd_size(SpillFile *f, uint64_t end) {
    std::lock_guard<std::mutex> guard(g_pool_lock);
    struct stat st;
    if (fstat(f->fd, &st) != 0) return errno;
    if ((uint64_t)st.st_size >= end) return 0;
    return ftruncate(f->fd, (off_t)end) == 0 ? 0 : errno;
}
} // namespace

void make_spill_file_write_in_place(int fd) {
    int err = keep_writes_in_place(fd);
    if (!err) return;
    static RepeatedWarning repeats;
    LogLevel at = repeats.level(err);
    SPW_LOG_AT(at, "could not make a spill file in %s write in place on btrfs (FS_NOCOW_FL: %s): its pages "
                   "written again after writeback need new disk space, so a full filesystem raises SIGBUS; "
                   "use a spill directory on ext4 or XFS, or one made with 'chattr +C'%s",
               spill_dir_path().c_str(), strerror(err), RepeatedWarning::tail(at));
}

static_assert(sizeof stats_key::kFallbackNames / sizeof *stats_key::kFallbackNames == (size_t)Fallback::count_,
              "stats_format.h names every Fallback, in order");

const char *fallback_name(Fallback f) { return stats_key::kFallbackNames[static_cast<int>(f)]; }

Fallback fallback_from_errno(int err) {
    switch (err) {
    case ENOSPC: return Fallback::no_space;
    case EDQUOT: return Fallback::quota;
    case EOPNOTSUPP: return Fallback::unsupported;
    case EIO: return Fallback::io_error;
    case EFBIG: return Fallback::too_big;
    case EMFILE: case ENFILE: return Fallback::too_many_files;
    case ENOMEM: return Fallback::map_failed;
    default: return Fallback::other;
    }
}

const char *fallback_remedy(Fallback f) {
    switch (f) {
    case Fallback::no_space: return "free disk space there, or move spill.dir to a disk with room";
    case Fallback::quota: return "raise your disk quota there, or move spill.dir to another disk";
    case Fallback::unsupported: return "put spill.dir on a filesystem that can reserve space (ext4, XFS)";
    case Fallback::io_error: return "check that disk (dmesg shows its errors), or move spill.dir to another one";
    case Fallback::too_big: return "raise the file size limit (ulimit -f)";
    case Fallback::no_spill_dir: return "set SPILLWAY_DIR to a writable directory of your own on a disk";
    case Fallback::too_many_files:
    case Fallback::memfd_failed: return "raise the open files limit (ulimit -n)";
    case Fallback::map_failed: return "raise vm.max_map_count (sysctl) or ulimit -v";
    case Fallback::arena_full: return "see the warning about spillway's address range";
    default: return "check that spill.dir is a writable directory on a disk filesystem";
    }
}

void backing_init(const Settings &s) {
    g_dedicated_min = s.dedicated_min;
    g_allow_tmpfs = s.allow_tmpfs;
    auto *d = new SpillDir(open_spill_dir(s.spill_dir, s.allow_tmpfs));
    // Checked now, held open only once needed (spill_dir_fd): a process that
    // never spills, like most programs a job execs, keeps no descriptor of ours.
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
    bool needs_disk = policy_needs_disk(s.policy);
    if (needs_disk && spill_dir_falls_back(*d, s.spill_dir_given)) {
        // The default is not ours (someone created it first), or this process
        // changed user since the directory was chosen: a private directory
        // keeps the job protected; it is made at the first spill, so that a
        // process that never spills leaves nothing behind.
        SPW_LOG(warn, "spill directory refused: %s; spilling to a new private directory "
                      "(%s/spillway-%u.XXXXXX) instead, so the job is still protected; set "
                      "spill.dir to a directory of your own to silence this",
                d->why_unusable.c_str(), kPrivateSpillBase, (unsigned)geteuid());
        d->usable = true;
        d->path = std::string("(a private directory, made at the first spill; refused: ") + d->path + ")";
        g_private_pending = true;
    } else if (needs_disk && !d->usable && !spill_dir_refusal_is_fatal(*d, needs_disk)) {
        SPW_LOG(warn, "spill directory refused: %s; large allocations will use anonymous "
                      "memory, NOT protected from the memory limit",
                d->why_unusable.c_str());
    } else if (d->on_tmpfs && d->usable) {
        SPW_LOG(warn, "spill directory %s is on tmpfs/ramfs (allowed by spill.allow_tmpfs): "
                      "spilled bytes stay in RAM, so the memory limit can still OOM-kill the job; "
                      "point spill.dir at a directory on a disk to be protected", d->path.c_str());
    }
    // A fatal refusal says nothing here: start-up reports it as the config
    // error it is (exit 78), and a warning first would contradict it.
    g_dir.store(d, std::memory_order_release);
}

// Caller holds g_dir_lock. Returns the directory's fd or -1.
static int open_private_dir() {
    g_private_pending = false;
    auto *d = new SpillDir(open_private_spill_dir(g_allow_tmpfs));
    int fd = d->fd;
    d->fd = -1;
    if (d->usable) {
        g_private_creator = getpid();
        SPW_LOG(info, "spilling to the private directory %s", d->path.c_str());
    } else {
        if (fd >= 0) close(fd);
        fd = -1;
        SPW_LOG(warn, "%s; large allocations use ordinary memory and are NOT protected from the "
                      "memory limit: %s", d->why_unusable.c_str(), fallback_remedy(Fallback::no_spill_dir));
    }
    g_dir.store(d, std::memory_order_release);
    return fd;
}

// The private directory goes with the process that made it, when empty
// (spill files are unnamed; an exported file keeps it).
__attribute__((destructor)) static void remove_private_dir() {
    SpillDir *d = g_dir.load(std::memory_order_acquire);
    if (d && g_private_creator && g_private_creator == getpid()) rmdir(d->path.c_str());
}

const SpillDir &spill_dir() {
    // Never destroyed: allocations made after static destructors ran (other
    // libraries' exit code) still ask (see symbols.cpp's image cache).
    static const union Never {
        SpillDir dir;
        Never() : dir() {}
        ~Never() {}
    } none;
    SpillDir *d = g_dir.load(std::memory_order_acquire);
    return d ? *d : none.dir;
}
static const SpillDir &dir() { return spill_dir(); }
bool disk_usable() { return dir().usable; }
const std::string &disk_unusable_reason() { return dir().why_unusable; }
// The held directory was removed (a cleanup job's rm -rf): its link count
// is 0. ext4 then refuses new files in it (EPERM), but btrfs and XFS still
// create unnamed ones there, so the job went on spilling into a directory
// nobody can see, and on every filesystem a directory made again at the
// path was never used. A removed directory is opened again by its path.
static bool dir_removed(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_nlink == 0;
}

int spill_dir_fd() {
    int fd = g_dir_fd.load(std::memory_order_acquire);
    if (fd >= 0 ? !dir_removed(fd) : !disk_usable()) return fd;
    std::lock_guard<std::mutex> guard(g_dir_lock);
    fd = g_dir_fd.load(std::memory_order_relaxed);
    bool held = fd >= 0;
    if (held && !dir_removed(fd)) return fd;
    if (!held && g_private_pending) {
        fd = open_private_dir();
        g_dir_fd.store(fd, std::memory_order_release);
        return fd;
    }
    const SpillDir &d = dir();
    int opened = move_high(open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    int err = opened < 0 ? errno : 0;
    struct stat st;
    if (opened >= 0 && (fstat(opened, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())) {
        close(opened); // replaced since start-up by something that is not ours
        opened = -1;
    }
    if (opened < 0) {
        // Asked again at every spill (a recreated directory is used again):
        // said once per reason, not at every allocation.
        static RepeatedWarning repeats;
        LogLevel at = repeats.level(err);
        SPW_LOG_AT(at, "cannot open the spill directory %s any more (%s); large allocations use "
                       "ordinary memory and are NOT protected until it is back: recreate it "
                       "(mkdir -m 0700 %s) and keep cleanup jobs away from a running job's "
                       "spill directory%s",
                   d.path.c_str(), err ? strerror(err) : "replaced by something that is not this user's directory",
                   d.path.c_str(), RepeatedWarning::tail(at));
        // A removed directory's descriptor stays held (never closed while
        // another thread may be using its number) until one is back.
        return -1;
    }
    if (held) {
        // The new directory takes the old one's number in one step: a thread
        // that read the number meanwhile gets one or the other, never a
        // descriptor closed and reused for something else.
        int rc = dup3(opened, fd, O_CLOEXEC);
        close(opened);
        return rc < 0 ? -1 : fd;
    }
    g_dir_fd.store(opened, std::memory_order_release);
    return opened;
}
const std::string &spill_dir_path() { return dir().path; }

int new_dedicated_disk_file(size_t len, SpillFile **out) {
    int fd = create_unnamed_file(spill_dir_fd());
    if (fd < 0) return -fd;
    make_spill_file_write_in_place(fd);
    if (int err = reserve(fd, 0, len)) {
        close(fd);
        return err;
    }
    *out = new_spill_file(fd, Backing::disk, false);
    if (!*out) {
        close(fd);
        return ENOMEM;
    }
    return 0;
}

int new_dedicated_memfd(size_t len, SpillFile **out) {
    int fd = move_high(memfd_create("spillway-promoted", MFD_CLOEXEC));
    if (fd < 0) return errno;
    if (ftruncate(fd, (off_t)len) != 0) {
        int err = errno;
        close(fd);
        return err;
    }
    *out = new_spill_file(fd, Backing::memory, false);
    if (!*out) {
        close(fd);
        return ENOMEM;
    }
    return 0;
}

void close_spill_file(SpillFile *f) {
    if (f->fd >= 0) close(f->fd);
    f->~SpillFile();
    mi_free(f);
}

static int back_disk_in(uintptr_t start, size_t len, bool own_file, Placement *out) {
    if (!disk_usable()) return ENOENT;
    if (own_file || len >= g_dedicated_min) {
        SpillFile *f = nullptr;
        if (int err = new_dedicated_disk_file(len, &f)) return err;
        if (int err = map_shared(start, len, f->fd, 0)) {
            close_spill_file(f);
            return err;
        }
        *out = {Backing::disk, f, 0};
        return 0;
    }
    int err = 0;
    SpillFile *pool = disk_pool(err);
    if (!pool) return err;
    uint64_t off = arena::offset_of(start);
    if ((err = reserve(pool->fd, off, len))) return err;
    if ((err = map_shared(start, len, pool->fd, off))) {
        fallocate(pool->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
        return err;
    }
    *out = {Backing::disk, pool, off};
    return 0;
}

int back_disk(uintptr_t start, size_t len, Placement *out) { return back_disk_in(start, len, false, out); }
int back_disk_own_file(uintptr_t start, size_t len, Placement *out) { return back_disk_in(start, len, true, out); }

int back_memory(uintptr_t start, size_t len, Placement *out) {
    int err = 0;
    SpillFile *pool = memory_pool(err);
    if (!pool) return err;
    uint64_t off = arena::offset_of(start);
    if ((err = ensure_memfd_size(pool, off + len))) return err;
    if ((err = map_shared(start, len, pool->fd, off))) return err;
    *out = {Backing::memory, pool, off};
    return 0;
}

int back_anon(uintptr_t start, size_t len, Placement *out) {
    void *p = mmap((void *)start, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) return errno;
    *out = {Backing::anon, nullptr, 0};
    return 0;
}

int grow_backing(const Placement &p, uintptr_t start, size_t old_len, size_t new_len, int advice,
                 bool is_private) {
    size_t add = new_len - old_len;
    uintptr_t tail = start + old_len;
    if (p.backing == Backing::anon) {
        void *q = mmap((void *)tail, add, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        return q == MAP_FAILED ? errno : 0;
    }
    SpillFile *f = p.file;
    if (!f || f->foreign || is_private) return EPERM;
    uint64_t off = p.file_off + old_len;
    if (p.backing == Backing::disk) {
        if (int err = reserve(f->fd, off, add)) return err;
    } else if (int err = ensure_memfd_size(f, off + add)) {
        return err;
    }
    if (int err = map_shared(tail, add, f->fd, off)) {
        if (p.backing == Backing::disk || f->pool)
            fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)add);
        return err;
    }
    // A new mapping starts with MADV_NORMAL: give the tail the region's
    // advice, or a random fault there reads megabytes around it.
    if (advice) madvise((void *)tail, add, advice);
    return 0;
}

namespace {
// A pool range becomes a hole again: the blocks (or RAM) go back and a reuse
// reads zeros. Never from a fork child: the pool is the parent's.
bool punch_pool_range(SpillFile *f, uint64_t off, size_t len) {
    if (f->foreign) return true;
    if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0) return true;
    int err = errno;
    static RepeatedWarning repeats; // one line per reason, not one per free
    LogLevel at = repeats.level(err);
    SPW_LOG_AT(at, "could not give back the %zu bytes of a freed %s region (%s): they and their "
                   "address range stay used until the process exits; %s%s",
               len, backing_name(f->kind), strerror(err),
               err == EOPNOTSUPP ? "put spill.dir on a filesystem that can punch holes (ext4, XFS)"
                                 : "check the spill directory's disk (dmesg shows its errors)",
               RepeatedWarning::tail(at));
    return false;
}
} // namespace

bool release_backing(const Placement &p, size_t len) {
    SpillFile *f = p.file;
    if (!f) return true;
    if (f->pool) return punch_pool_range(f, p.file_off, len);
    // Dedicated: closing our descriptor only drops our reference; the last
    // close of an unnamed file frees it. A fork child's close leaves the
    // parent's descriptor and file untouched.
    close_spill_file(f);
    return true;
}

void release_left_file(SpillFile *f) {
    if (f) reaper_submit_file(f);
}

int initial_advice(size_t map_len, bool random_access) {
    return random_access || map_len < kStreamAdviceFrom ? MADV_RANDOM : MADV_SEQUENTIAL;
}

void backing_after_fork_child() {
    // Pools stay open (inherited regions are mapped from them) but are now
    // the parent's: this process will make its own on its next large alloc.
    if (g_disk_pool) g_disk_pool->foreign = true;
    if (g_memory_pool) g_memory_pool->foreign = true;
    g_disk_pool = nullptr;
    g_memory_pool = nullptr;
    new (&g_pool_lock) std::mutex();
    new (&g_dir_lock) std::mutex(); // a thread opening the directory may be gone
}

} // namespace spillway
