"""spillway: steer the spillway allocator shim from Python, for PyTorch
tensors and numpy arrays.

This module proves nothing and allocates nothing itself: it is a thin ctypes
layer over the shim's C control API (``spillway.h``), found in the running
process with ``ctypes.CDLL(None)``. When ``libspillway.so`` is not preloaded
those symbols are absent, and every function here is a harmless no-op that
returns False or None, so the same training script runs with and without the
shim.

The physics, briefly (README.md of the repository, "Why it works"):

* A large buffer the shim placed *on disk* is a ``MAP_SHARED`` mapping of a
  reserved spill file: its bytes are page cache, charged to the cgroup while
  resident but reclaimable, so the kernel can write them back and evict them
  under memory pressure instead of OOM-killing the job.
* A *memory* buffer is a memfd: RAM, shareable without a copy, but (without
  swap) as unreclaimable as anonymous memory.
* Every function takes a tensor or array, or any view of one: it acts on the
  allocation (the shim's *region*) that holds the view's first byte.
"""

import ctypes
import errno
import os
import sys
import warnings
import weakref

from . import _maps
from ._locate import library_path

__all__ = [
    "is_active",
    "backing",
    "is_disk_backed",
    "residency",
    "release_page_cache",
    "has_live_mapping",
    "release_page_cache_by_path",
    "spill",
    "export",
    "load",
    "prepare_spill_dir",
    "library_path",
    # The reference API (gigl.utils.share_memory): spillway/sharing.py.
    "allocate_disk_backed",
    "allocate_preshared",
    "spill_tensor_to_disk",
    "load_spilled_tensor",
    "is_tensor_spilling_enabled",
    "share_memory",
    "share_memory_for_ipc",
]

_PREPARED_MARKER = "SPILLWAY_PREPARED"
_BACKING_NAMES = {1: "disk", 2: "memory", 3: "anon"}


class _Api:
    """The shim's functions, bound once; absent when the shim is not loaded."""

    def __init__(self, lib):
        c_int, c_long, c_size_t = ctypes.c_int, ctypes.c_long, ctypes.c_size_t
        c_void_p, c_char_p = ctypes.c_void_p, ctypes.c_char_p

        def bind(name, restype, *argtypes):
            fn = getattr(lib, name)  # AttributeError when the symbol is absent
            fn.restype = restype
            fn.argtypes = list(argtypes)
            return fn

        self.is_active = bind("spillway_is_active", c_int)
        self.backing = bind("spillway_backing", c_int, c_void_p)
        self.is_disk_backed = bind("spillway_is_disk_backed", c_int, c_void_p)
        self.release_page_cache = bind("spillway_release_page_cache", c_int, c_void_p)
        self.residency = bind("spillway_residency", c_long, c_void_p, c_size_t)
        self.has_live_mapping = bind("spillway_has_live_mapping", c_int, c_char_p)
        self.release_page_cache_by_path = bind(
            "spillway_release_page_cache_by_path", c_int, c_char_p
        )
        self.spill = bind("spillway_spill", c_int, c_void_p)
        self.export = bind("spillway_export", c_int, c_void_p, c_char_p, c_size_t)
        self.map = bind("spillway_map", c_void_p, c_char_p, c_size_t)
        self.prepare_dir = bind("spillway_prepare_dir", c_int)

        def optional(name, restype, *argtypes):
            # Calls added after the first release: a missing one disables
            # only what needs it (sharing.py), not the whole helper.
            try:
                return bind(name, restype, *argtypes)
            except AttributeError:
                return None

        c_void_pp, c_size_tp = ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t)
        self.alloc_disk = optional("spillway_alloc_disk", c_void_p, c_size_t, ctypes.c_uint)
        self.threshold = optional("spillway_threshold", c_size_t)
        self.can_spill = optional("spillway_can_spill", c_int)
        self.memory_fits = optional("spillway_memory_fits", c_int, c_size_t)
        self.region = optional("spillway_region", c_int, c_void_p, c_void_pp, c_size_tp)
        self.file_path = optional("spillway_file_path", c_int, c_void_p, c_char_p, c_size_t)
        # The process's free(): the shim's own when it is preloaded.
        self.free = bind("free", None, c_void_p)
        self.getenv = bind("getenv", c_char_p, c_char_p)


def _bind():
    try:
        return _Api(ctypes.CDLL(None, use_errno=True))
    except (OSError, AttributeError):
        return None


_api = _bind()


def _live():
    """The bound API when the shim is loaded and routing, else None."""
    if _api is None or _api.is_active() != 1:
        return None
    return _api


# --- from a tensor or array to addresses -----------------------------------


def _is_torch_tensor(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _target(x):
    """(bound API, span of x) when the shim is routing and x has a span,
    else (None, None): every function below starts here."""
    api = _live()
    span = _span(x) if api is not None else None
    return (api, span) if span is not None else (None, None)


def _span(x):
    """(first byte, length of the span in bytes, start of the allocation).

    The span covers every element of a strided view (numpy strides may be
    negative). The allocation start is what the owner of the memory got from
    malloc: the torch storage's first byte, or the data pointer of the numpy
    array at the end of the ``.base`` chain. None for memory that is not a
    CPU-side strided buffer (a CUDA or sparse tensor, for instance).
    """
    if _is_torch_tensor(x):
        if x.device.type != "cpu" or str(x.layout) != "torch.strided":
            return None
        esize = x.element_size()
        first = x.data_ptr()
        start = first - x.storage_offset() * esize
        if x.numel() == 0:
            return (first, 0, start)
        last = sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
        return (first, (last + 1) * esize, start)
    ai = getattr(x, "__array_interface__", None)
    if ai is None:
        raise TypeError(
            "spillway: expected a torch.Tensor or a numpy array (anything with "
            "__array_interface__), got %s" % type(x).__name__
        )
    first = ai["data"][0]
    shape = ai["shape"]
    itemsize = getattr(x, "itemsize", None) or int(ai["typestr"][2:])
    count = 1
    for n in shape:
        count *= n
    if count == 0:
        return (first, 0, first)
    strides = ai.get("strides")
    if strides is None:
        lo, hi = 0, count * itemsize
    else:
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    owner = x
    while hasattr(getattr(owner, "base", None), "__array_interface__"):
        owner = owner.base
    start = owner.__array_interface__["data"][0]
    return (first + lo, hi - lo, start)


def _path_bytes(path):
    return os.fsencode(os.fspath(path))


def _sync_marker(api):
    """Mirror the C environment's prepared-marker into os.environ.

    The shim sets SPILLWAY_PREPARED with setenv(3); os.environ is a copy made
    at start-up, and code that launches children with env=os.environ.copy()
    would otherwise drop the marker and let a child wipe live exports.
    """
    value = api.getenv(_PREPARED_MARKER.encode())
    if value is not None and os.environ.get(_PREPARED_MARKER) != os.fsdecode(value):
        os.environ[_PREPARED_MARKER] = os.fsdecode(value)


# --- queries ---------------------------------------------------------------


def is_active():
    """Whether the shim is preloaded and routing large allocations.

    False when libspillway.so is not loaded (or loaded but not routing, e.g.
    its address-space reservation was refused): every other function is
    then a no-op.
    """
    return _live() is not None


def backing(x):
    """Where the bytes of x (or of the allocation holding the view x) live.

    "disk" (a reserved spill file: reclaimable page cache), "memory" (a
    memfd: RAM, shareable, not reclaimable without swap), "anon" (plain
    anonymous memory), or None when the shim did not place it (a small
    allocation, foreign memory) or is not active.
    """
    api, span = _target(x)
    if api is None or span[1] == 0:
        return None
    return _BACKING_NAMES.get(api.backing(span[0]))


def is_disk_backed(x):
    """Whether x (or a view of it) is an mmap over a spill file rather than RAM.

    Read from the shim's own record of the region holding x's first byte, so
    the answer travels with every view. Memory-backed and anonymous buffers
    are RAM and answer False. A torch tensor the shim did not place (or any,
    without the shim) is disk-backed when torch mapped its storage over a
    file on a real filesystem (torch.from_file; a spilled tensor re-mapped
    where the shim is absent), looked up in /proc/self/maps; shared memory
    (share_memory_(), /dev/shm, memfd, tmpfs) is RAM and answers False.
    """
    api, span = _target(x)
    if api is not None and span[1] != 0:
        placed = api.backing(span[0])
        if placed != 0:  # the shim's own region: its record decides
            return placed == 1
    return _is_torch_file_mapping(x)


def _is_torch_file_mapping(x):
    """A torch CPU tensor whose storage torch itself mapped over a file on a
    real filesystem (torch.from_file, or a spilled tensor re-mapped in a
    process without the shim). Only storages torch calls shared are looked
    up in /proc/self/maps: a heap storage cannot be a file mapping."""
    if not _is_torch_tensor(x) or x.device.type != "cpu" or str(x.layout) != "torch.strided":
        return False
    if x.numel() == 0:
        return False
    storage = x.untyped_storage() if hasattr(x, "untyped_storage") else x.storage()
    return bool(storage.is_shared()) and _maps.file_on_disk_at(x.data_ptr())


def residency(x):
    """Bytes of x's span that are in RAM or page cache right now, measured.

    Measured, never assumed: cachestat(2) on the spill file where it applies,
    mincore(2) otherwise. Whole pages are counted, so a view that touches a
    page counts all of it. None when the shim is not active. Raises OSError
    when the kernel cannot answer (e.g. the memory is not mapped).
    """
    api, span = _target(x)
    if api is None:
        return None
    if span[1] == 0:
        return 0
    got = api.residency(span[0], span[1])
    if got < 0:
        raise OSError(-got, "spillway_residency: " + os.strerror(-got))
    return got


def has_live_mapping(path):
    """Whether THIS process still maps the file at path, read from
    /proc/self/maps: the kernel's own list, so it sees every mapping over the
    file no matter who created it. Without the shim the list is read here,
    in Python. False when the list cannot be read (not Linux)."""
    api = _live()
    if api is None:
        return _maps.maps_file(os.fspath(path))
    return api.has_live_mapping(_path_bytes(path)) == 1


# --- page cache ------------------------------------------------------------


def release_page_cache(x):
    """Write a disk-backed buffer's dirty pages out and ask the kernel to drop
    them from the page cache.

    A spilled buffer's pages are reclaimable but still charged to the cgroup
    while resident; dropping them releases the charge. Three steps, in this
    order, each load-bearing: msync (dirty pages cannot be dropped),
    MADV_DONTNEED on this process's mapping (without it the last step skips
    every still-mapped page), then POSIX_FADV_DONTNEED. The mapping stays
    valid and refaults from disk on the next access, so this pays only for
    data written now and read much later. It acts on the whole region
    holding x: other views of it lose their cached pages too.

    True when every step completed (not proof of eviction: measure with
    residency()). False when x is not disk-backed, is a fork child's
    private copy, or the shim is not active.
    """
    api, span = _target(x)
    if api is None or span[1] == 0:
        return False
    return api.release_page_cache(span[0]) == 0


def release_page_cache_by_path(path):
    """Request eviction of a file's page cache when nothing in this process
    maps it any more.

    The counterpart of release_page_cache() for a buffer already dropped:
    unmapping leaves the file's pages charged to the cgroup until the kernel
    reclaims them. Refused (False) while this process still maps the file,
    since POSIX_FADV_DONTNEED silently skips mapped pages; use
    release_page_cache() on the live buffer instead. True when the eviction
    was requested (the advice is advisory and reports no count). False also
    when the file cannot be opened or the shim is not active.
    """
    api = _live()
    if api is None:
        return False
    return api.release_page_cache_by_path(_path_bytes(path)) == 0


# --- moving and sharing ----------------------------------------------------


def spill(x):
    """Move the allocation holding x to a reserved spill file, in place.

    Same address, same bytes: x and every view of it keep working and now
    live in reclaimable page cache instead of RAM. Other threads may keep
    reading and writing it meanwhile (their stores wait for the move), but
    do not fill it from a system call (readinto, recv_into) during the move:
    the kernel's own stores into it can fail with EFAULT while it is
    write-protected. A buffer already on disk is left alone (True). False when the shim did not allocate x's
    storage, no spill file can be had, or the shim is not active.
    """
    api, span = _target(x)
    if api is None or span[1] == 0:
        return False
    if api.spill(span[2]) != 0:
        return False
    return api.is_disk_backed(span[0]) == 1


def export(x):
    """Give the spill file of the allocation holding x a name, and return it.

    The name lives in the spill directory, mode 0600, unguessable; another
    process maps it with load() and shares the bytes without a copy (writes
    are visible both ways). A buffer in RAM is first moved to a file of its
    own, in place. The file outlives this process: prepare_spill_dir() at
    the start of the next run removes it. None when x cannot be exported
    (not the shim's, a fork child's private copy, no spill directory) or
    the shim is not active.
    """
    api, span = _target(x)
    if api is None or span[1] == 0:
        return None
    for cap in (4096, 1 << 16):
        buf = ctypes.create_string_buffer(cap)
        rc = api.export(span[0], buf, cap)
        if rc != -errno.ERANGE:
            break
    _sync_marker(api)
    return os.fsdecode(buf.value) if rc == 0 else None


def _element_size(dtype):
    """(bytes per element, 'torch' or 'numpy', the numpy dtype or None)."""
    if type(dtype).__module__ == "torch":
        import torch

        return torch.empty(0, dtype=dtype).element_size(), "torch", None
    import numpy

    dt = numpy.dtype(dtype)
    return dt.itemsize, "numpy", dt


def load(path, dtype, shape):
    """Map the file at path (an exported spill file) as a tensor or array of
    dtype and shape, without copying its bytes anywhere.

    A torch dtype gives a torch.Tensor, anything else a numpy.ndarray. The
    result is a MAP_SHARED view of the file's page cache: writes through it
    are visible to the exporter and to every other process that maps the
    file, and its pages are reclaimable. The mapping is freed when the last
    tensor or array (or view) over it is garbage-collected.

    Raises ValueError when the file is not exactly the size the shape needs,
    which would otherwise be read as silently wrong data; FileNotFoundError
    when it is missing; OSError when it cannot be mapped writable. Returns
    None when the shim is not active.
    """
    api = _live()
    if api is None:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(n) for n in shape)
    count = 1
    for n in shape:
        if n < 0:
            raise ValueError("spillway.load: negative dimension in shape %r" % (shape,))
        count *= n
    itemsize, kind, np_dtype = _element_size(dtype)
    nbytes = count * itemsize
    fspath = os.fspath(path)
    size = os.stat(fspath).st_size  # FileNotFoundError when missing
    if nbytes == 0 or size != nbytes:
        raise ValueError(
            "spillway.load: %s holds %d bytes but shape %r of %s needs %d; pass the "
            "dtype and shape the file was exported with"
            % (fspath, size, shape, np_dtype if np_dtype is not None else dtype, nbytes)
        )
    ctypes.set_errno(0)
    addr = api.map(_path_bytes(fspath), nbytes)
    if not addr:
        err = ctypes.get_errno()
        if err == errno.ENOSYS:
            return None
        if err == errno.EINVAL:
            raise ValueError(
                "spillway.load: %s cannot be mapped as %d bytes (%s); is it a regular file "
                "of that size?" % (fspath, nbytes, os.strerror(err))
            )
        raise OSError(err, "spillway.load: cannot map " + os.strerror(err), fspath)
    # The owner of the mapping: a ctypes array over it, with a finalizer that
    # hands the region back to the shim (free(), which unmaps it) once the
    # last array or tensor over it is gone. Both numpy and torch keep the
    # buffer object alive as long as any view of it exists.
    owner = (ctypes.c_ubyte * nbytes).from_address(addr)
    weakref.finalize(owner, api.free, addr)
    if kind == "torch":
        import torch

        return torch.frombuffer(owner, dtype=dtype, count=count).view(shape)
    import numpy

    return numpy.frombuffer(owner, dtype=np_dtype, count=count).reshape(shape)


def prepare_spill_dir():
    """Clear spill files exported by earlier runs, ONCE per run, before
    anything in the run can spill.

    Call it at the start of the run's first process. Only names spillway
    gave (spillway-export-*) are removed, and not while the process that
    exported them is still running; never by age: with children
    spilling one after another, a later child cannot tell a sibling's live
    file from a stale one by its age. An environment marker
    (SPILLWAY_PREPARED) tells every descendant that an ancestor already did
    it; it is mirrored into os.environ so that children launched with a
    copy of os.environ see it too. Idempotent; a no-op when the shim is not
    active. Returns None.
    """
    api = _live()
    if api is None:
        return None
    rc = api.prepare_dir()
    _sync_marker(api)
    if rc < 0:
        warnings.warn(
            "spillway: could not clear stale exports from the spill directory (%s); "
            "check SPILLWAY_DIR" % os.strerror(-rc),
            RuntimeWarning,
            stacklevel=2,
        )
    return None


# The reference API for aware PyTorch code (gigl.utils.share_memory), and the
# reducer that sends spilled tensors by path (spillway/ipc.py). Imported last:
# both build on the functions above.
from .sharing import (  # noqa: E402
    allocate_disk_backed,
    allocate_preshared,
    is_tensor_spilling_enabled,
    load_spilled_tensor,
    logger,
    share_memory,
    share_memory_for_ipc,
    spill_tensor_to_disk,
)

if "torch" in sys.modules:  # e.g. a spawn child unpickling a spilled tensor
    from . import ipc as _ipc

    _ipc.register()
