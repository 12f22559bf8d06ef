"""probe.py — proves nothing by itself: the Python twin of probe.h. Asks the
shim through ctypes over the running process (so scripts run unchanged
without it) whether it is active and where an address's bytes live, and
reads the container's memory usage from its cgroup (v2 or v1)."""
import ctypes

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
