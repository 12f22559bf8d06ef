"""support.py: what the Python helper tests share (proves nothing itself):
the spill directory of the test, patterns that prove data survived, page
cache of a file measured without the shim, running a second interpreter,
and waiting for events the shim completes in the background."""

import ctypes
import os
import shutil
import subprocess
import sys
import time

PYTHON = "/usr/bin/python3"  # the interpreter with Debian's torch and numpy
MiB = 1 << 20


def spill_dir():
    d = os.environ.get("SPILLWAY_DIR")
    if not d:
        sys.exit("python test: SPILLWAY_DIR is not set; run it with `meson test --suite python`")
    return d


def empty_spill_dir():
    d = spill_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    for name in os.listdir(d):
        path = os.path.join(d, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def numpy_pattern(shape, seed, dtype="float32"):
    """A deterministic array: every element depends on its index and seed."""
    import numpy

    n = 1
    for s in shape:
        n *= s
    return ((numpy.arange(n, dtype=numpy.int64) * 2654435761 + seed) % 1000003).astype(dtype).reshape(shape)


def torch_pattern(shape, seed, dtype=None):
    """The same pattern in a tensor torch allocated itself (posix_memalign)."""
    import torch

    t = torch.empty(shape, dtype=dtype or torch.float32)
    t.copy_(torch.from_numpy(numpy_pattern(shape, seed)))
    return t


def file_cached_bytes(path):
    """Bytes of the file in the page cache, from cachestat(2)."""

    class Range(ctypes.Structure):
        _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]

    class Stat(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "writeback", "evicted", "recent")]

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        r, s = Range(0, 0), Stat()
        if libc.syscall(451, fd, ctypes.byref(r), ctypes.byref(s), 0) != 0:
            raise OSError(ctypes.get_errno(), "cachestat failed: this test needs Linux 6.5 or later")
        return s.cache * os.sysconf("SC_PAGE_SIZE")
    finally:
        os.close(fd)


def eventually(pred, seconds=10.0):
    """Polls pred until it is true or seconds have passed; returns its last
    value. For background work (the shim's reaper unmapping a freed region),
    never to assert timing."""
    until = time.monotonic() + seconds
    while not pred():
        if time.monotonic() > until:
            return pred()
        time.sleep(0.002)
    return True


def run_python(code, env=None, input=None, preexec_fn=None):
    """Runs code in a second /usr/bin/python3 (same environment unless env is
    given); returns (exit status, stdout, stderr)."""
    p = subprocess.run([PYTHON, "-c", code], env=env, input=input, capture_output=True, text=True,
                       preexec_fn=preexec_fn)
    return p.returncode, p.stdout, p.stderr


def shim_in_process():
    with open("/proc/self/maps") as f:
        return "libspillway" in f.read()


class MemoryCgroup:
    """A memory cgroup of its own under this process's (v1 memory controller,
    or v2), removed on close(); a child joins it with preexec_fn=cg.join.
    Raises RuntimeError saying why when none can be made (not root, no
    writable hierarchy)."""

    def __init__(self, limit):
        v1 = v2 = None
        with open("/proc/self/cgroup") as f:
            for line in f.read().splitlines():
                if ":memory:" in line:
                    v1 = line.split(":memory:", 1)[1]
                elif line.startswith("0::"):
                    v2 = line[3:]
        if v1 is not None:
            parent, self.v2 = "/sys/fs/cgroup/memory" + v1.rstrip("/"), False
        elif v2 is not None:
            parent, self.v2 = "/sys/fs/cgroup" + v2.rstrip("/"), True
            with open(parent + "/cgroup.subtree_control") as f:
                enabled = "memory" in f.read()
            if not enabled:
                with open(parent + "/cgroup.subtree_control", "w") as f:
                    f.write("+memory")
        else:
            raise RuntimeError("no memory cgroup in /proc/self/cgroup")
        self.dir = "%s/spillway-test-%d-%s" % (parent, os.getpid(), os.urandom(4).hex())
        os.mkdir(self.dir)
        with open(self.dir + ("/memory.max" if self.v2 else "/memory.limit_in_bytes"), "w") as f:
            f.write(str(limit))
        # No swap either (as docker run --memory-swap equal to --memory): the
        # tests expect OOM kills, and a machine may have swap turned on.
        swap = self.dir + ("/memory.swap.max" if self.v2 else "/memory.memsw.limit_in_bytes")
        if os.path.exists(swap):
            with open(swap, "w") as f:
                f.write("0" if self.v2 else str(limit))

    def join(self):
        with open(self.dir + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))

    def close(self):
        for _ in range(500):  # removable once its processes are gone
            try:
                os.rmdir(self.dir)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)
        sys.stderr.write("python test: could not remove cgroup %s; remove it with rmdir\n" % self.dir)
