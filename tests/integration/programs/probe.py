"""probe.py — proves nothing by itself: the Python twin of probe.h. Asks the
shim through ctypes over the running process (so scripts run unchanged
without it) whether it is active and where an address's bytes live, and
reads the container's memory usage from its cgroup (v2 or v1), where a
mapping lives and how full /dev/shm is."""
import ctypes
import os

_PROCESS = ctypes.CDLL(None)
_BACKINGS = {0: "none", 1: "disk", 2: "memory", 3: "anon"}


def _symbol(name, restype, argtypes):
    try:
        fn = getattr(_PROCESS, name)
    except AttributeError:
        return None
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


_is_active = _symbol("spillway_is_active", ctypes.c_int, [])
_backing = _symbol("spillway_backing", ctypes.c_int, [ctypes.c_void_p])


def shim_active():
    """True when libspillway is preloaded and routing large allocations."""
    return bool(_is_active and _is_active())


def backing(address):
    """'disk', 'memory', 'anon' or 'none' for the region holding address."""
    return _BACKINGS.get(_backing(address) if _backing else 0, "?")


def cgroup_usage():
    """Bytes charged to this container's memory cgroup, page cache included."""
    for path in ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory/memory.usage_in_bytes"):
        try:
            with open(path) as f:
                return int(f.read())
        except (OSError, ValueError):
            continue
    raise SystemExit("probe.py: cannot read memory.current or memory.usage_in_bytes; "
                     "run inside a container with a memory cgroup")


def cgroup_stat():
    """This container's cgroup memory split, in bytes: 'anon' (anonymous),
    'shmem' (tmpfs and memfd: as unreclaimable as anon without swap) and
    'file' (page cache, shmem included). Keys missing from the kernel's
    memory.stat are absent."""
    names = {"/sys/fs/cgroup/memory.stat": {"anon": "anon", "shmem": "shmem", "file": "file"},
             "/sys/fs/cgroup/memory/memory.stat": {"rss": "anon", "shmem": "shmem", "cache": "file"}}
    for path, keys in names.items():
        try:
            with open(path) as f:
                lines = f.read().split("\n")
        except OSError:
            continue
        stat = {}
        for line in lines:
            parts = line.split()
            if len(parts) == 2 and parts[0] in keys:
                stat[keys[parts[0]]] = int(parts[1])
        return stat
    raise SystemExit("probe.py: cannot read memory.stat; run inside a container with a memory cgroup")


def mapping_of(address):
    """The path (or '[anon]') of the mapping in /proc/self/maps holding address."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi:
                return fields[5].strip() if len(fields) > 5 else "[anon]"
    return "(not mapped)"


def devshm_mib():
    """(size, used) of this container's /dev/shm in whole MiB."""
    v = os.statvfs("/dev/shm")
    return v.f_blocks * v.f_frsize >> 20, (v.f_blocks - v.f_bfree) * v.f_frsize >> 20
