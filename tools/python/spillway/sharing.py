"""spillway.sharing: the reference API for aware PyTorch code (the
functions of gigl.utils.share_memory, same names, same documented
behaviour), over spillway's C control API.

Where the reference keeps its own spill files in GIGL_TENSOR_SPILL_DIR,
these functions let the shim do it: a spilled tensor is a region of the shim
over a reserved (posix_fallocate'd) file of its own in the spill directory,
named at birth (spillway-export-*), so that another process can map it by
path (ipc.py) and the next run's prepare_spill_dir() clears it. Every
"returns None when ..." of the reference returns None here in the same
cases, so code written for the reference falls back the same way; without
the shim, spilling is disabled and the functions behave as the reference
does when GIGL_TENSOR_SPILL_DIR is unset.

Invariant: a tensor these functions return over spillway memory owns that
memory through a ctypes buffer whose finalizer frees it, so the region (and
the mapping) lives exactly as long as the last view of it.
"""

import ctypes
import errno
import logging
import os
import stat
import weakref
from collections.abc import Mapping

from . import _live, export, is_disk_backed
from . import backing as _backing_of

logger = logging.getLogger("spillway")

# The shim's default threshold (config/spillway.toml): what "large" means to
# allocate_preshared when the shim is not there to say.
DEFAULT_THRESHOLD = 64 << 20
_SPILLWAY_RANDOM_ACCESS = 4  # spillway.h
_QUANTIZED = ("qint8", "quint8", "qint32", "quint4x2", "quint2x4")


def _torch():
    import torch

    return torch


def _geometry(shape, dtype):
    """(shape as a tuple of ints, element count, bytes)."""
    torch = _torch()
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(n) for n in shape)
    count = 1
    for n in shape:
        if n < 0:
            raise ValueError("spillway: negative dimension in shape %r" % (shape,))
        count *= n
    return shape, count, count * torch.empty(0, dtype=dtype).element_size()


def _is_quantized(dtype):
    torch = _torch()
    return any(getattr(torch, name, None) == dtype for name in _QUANTIZED)


def _over(api, addr, nbytes, dtype, count, shape, offset=0):
    """A tensor over shim memory at addr, owning it: the last view gone,
    free() hands the region back (a named file's region is unmapped at once)."""
    torch = _torch()
    owner = (ctypes.c_ubyte * nbytes).from_address(addr)
    weakref.finalize(owner, api.free, addr)
    return torch.frombuffer(owner, dtype=dtype, count=count, offset=offset).view(shape)


# --- queries ---------------------------------------------------------------


def is_tensor_spilling_enabled():
    """Whether large tensors should go to disk: the shim is preloaded and
    routing, and its spill directory is usable (a real filesystem where
    space can be reserved). The reference's GIGL_TENSOR_SPILL_DIR is the
    shim's SPILLWAY_DIR (or [spill] dir); False without the shim."""
    api = _live()
    return api is not None and api.can_spill is not None and api.can_spill() == 1


def _threshold(api):
    return api.threshold() if api is not None and api.threshold is not None else DEFAULT_THRESHOLD


# --- allocation --------------------------------------------------------------


def allocate_disk_backed(shape, dtype):
    """An EMPTY writable tensor whose bytes live in a file, or None to fall
    back to RAM (torch.empty).

    The file is reserved up front (posix_fallocate by the shim, mandatory):
    a filesystem that fills later cannot SIGBUS a write through the mapping,
    and one that cannot reserve gives None. The bytes never occupy anonymous
    memory; they are page cache, charged to the cgroup while resident but
    reclaimable. The file is named in the spill directory (mode 0600) so the
    tensor crosses a process boundary by path, and lives until the next
    run's prepare_spill_dir(). Reads as zeros until written.

    None whenever a file-backed buffer is not available or not worth it:
    spilling disabled (no shim, no usable spill directory), below the
    shim's threshold, a quantized dtype, no room to reserve, reservation
    unsupported by the filesystem, an I/O failure.
    """
    return _allocate_on_disk(shape, dtype, 0)


def _allocate_on_disk(shape, dtype, flags):
    shape, count, nbytes = _geometry(shape, dtype)
    api = _live()
    if not is_tensor_spilling_enabled() or api.alloc_disk is None or api.file_path is None:
        return None
    if _is_quantized(dtype) or nbytes == 0 or nbytes < api.threshold():
        return None
    ctypes.set_errno(0)
    addr = api.alloc_disk(nbytes, flags)
    if not addr:
        err = ctypes.get_errno()
        logger.info("spillway: no spill file for %d bytes (%s); falling back to RAM", nbytes,
                    os.strerror(err) if err else "unknown error")
        return None
    tensor = _over(api, addr, nbytes, dtype, count, shape)
    if export(tensor) is None:  # named at birth: it crosses processes by path
        logger.info("spillway: could not name the spill file of %d bytes; falling back to RAM", nbytes)
        return None  # the tensor (and its region) is dropped here
    from . import ipc

    ipc.register()
    return tensor


def _shared_memory(shape, dtype, count, nbytes):
    """A tensor in POSIX-style shared memory that torch already counts as
    shared, so share_memory_() finds nothing to copy. Under the
    file_descriptor strategy (Linux's default) a memfd: RAM, shareable by
    descriptor, not bound by the size of /dev/shm."""
    torch = _torch()
    import torch.multiprocessing as mp

    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    if mp.get_sharing_strategy() == "file_system" or not hasattr(os, "memfd_create"):
        storage = torch.UntypedStorage._new_shared(nbytes)
    else:
        fd = os.memfd_create("spillway-preshared", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, nbytes)
            storage = torch.UntypedStorage._new_shared_fd_cpu(fd, nbytes)  # dups fd
        finally:
            os.close(fd)
    return torch.empty(0, dtype=dtype).set_(storage, 0, shape, _contiguous_strides(shape))


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def allocate_preshared(shape, dtype, random_access=False):
    """Allocate a large tensor in its FINAL home, so share_memory_() cannot
    duplicate it.

    Both homes are immune to share_memory_()'s copy into /dev/shm: a spill
    file (allocate_disk_backed(); share_memory() and consumers that check
    is_disk_backed() leave it alone, and it pickles by path), or shared
    memory allocated directly (torch counts it as shared, so share_memory_()
    does nothing).

    Disk first for a destination written in order. With random_access=True
    memory is preferred, because an 8-byte write to an uncached file page is
    a 4 KiB read-modify-write; a file (with MADV_RANDOM) is then only the
    checked, loudly logged fallback for when the cgroup cannot hold the
    tensor in memory (spillway_memory_fits: headroom above the configured
    memory_reserve).

    Below the threshold (the shim's; 64 MiB without the shim) a plain
    torch.empty. Uninitialised in all cases, like torch.empty.
    """
    torch = _torch()
    shape, count, nbytes = _geometry(shape, dtype)
    api = _live()
    if nbytes < _threshold(api):
        return torch.empty(shape, dtype=dtype)
    if not random_access:
        tensor = allocate_disk_backed(shape, dtype)
        return tensor if tensor is not None else _shared_memory(shape, dtype, count, nbytes)
    fits = api.memory_fits(nbytes) if api is not None and api.memory_fits is not None else 1
    if fits != 0 or not is_tensor_spilling_enabled():
        return _shared_memory(shape, dtype, count, nbytes)
    tensor = _allocate_on_disk(shape, dtype, _SPILLWAY_RANDOM_ACCESS)
    if tensor is None:
        logger.warning("spillway: a random-access tensor of %d bytes does not fit in the cgroup's "
                       "memory and no spill file could be had; it goes to shared memory and may be "
                       "OOM-killed", nbytes)
        return _shared_memory(shape, dtype, count, nbytes)
    logger.warning("spillway: a random-access tensor of %d bytes went to a spill file because the "
                   "cgroup has no headroom for it in memory; expect scattered writes to run orders "
                   "of magnitude slower than in RAM", nbytes)
    return tensor


# --- spilling and re-mapping -------------------------------------------------


def spill_tensor_to_disk(tensor):
    """Write tensor to disk and return a tensor mapped over the file, or None
    to keep it.

    A new tensor of the same shape and values in a spill file of its own
    (allocate_disk_backed(), then one copy); the input is left alone. A
    tensor that is already disk-backed is returned as it is: when the shim
    placed it on disk, its file is given a name first (in place: same
    address, same bytes), which is what lets it pickle by path. The returned
    tensor's storage is known to be disk-backed (is_disk_backed()), so
    share_memory() leaves it alone and pickling ships its path, not its
    bytes. None covers every reason not to spill: spilling disabled, below
    the threshold, not a CPU strided tensor, a quantized dtype, I/O failure.
    """
    torch = _torch()
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu":
        return None
    if tensor.layout != torch.strided or not is_tensor_spilling_enabled():
        return None
    if is_disk_backed(tensor):
        if _backing_of(tensor) != "disk" or export(tensor) is not None:
            return tensor  # torch's own file mapping, or a region of the shim now named
    dest = allocate_disk_backed(tuple(tensor.shape), tensor.dtype)
    if dest is None:
        return None
    with torch.no_grad():
        dest.copy_(tensor)
    return dest


def load_spilled_tensor(path, dtype, shape):
    """Re-map a spilled tensor in the current process, without copying its
    bytes anywhere: a MAP_SHARED view of the file's page cache, so writes
    are seen by every process that maps it.

    With the shim, the mapping is a region of its own (is_disk_backed(),
    release_page_cache() work on it); without it, torch.from_file maps it.

    Raises ValueError if the file is the wrong size for shape (it would
    otherwise be read as silently wrong data), FileNotFoundError if it is
    missing, OSError if it cannot be mapped writable.
    """
    from . import ipc, load

    torch = _torch()
    shape, count, nbytes = _geometry(shape, dtype)
    fspath = os.fspath(path)
    st = os.stat(fspath)  # FileNotFoundError when missing
    if not stat.S_ISREG(st.st_mode):  # first: a directory's size is 4096 on ext4, 0 on btrfs
        raise OSError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.ENODEV,
                      "spillway.load_spilled_tensor: cannot map writable: not a regular file", fspath)
    size = st.st_size
    if nbytes == 0 or size != nbytes:
        raise ValueError(
            "spillway.load_spilled_tensor: %s holds %d bytes but shape %r of %s needs %d; pass "
            "the dtype and shape it was spilled with" % (fspath, size, shape, dtype, nbytes))
    ipc.register()
    tensor = load(fspath, dtype, shape) if _live() is not None else None
    if tensor is not None:
        return tensor
    if not os.access(fspath, os.R_OK | os.W_OK):
        raise OSError(errno.EACCES, "spillway.load_spilled_tensor: cannot map writable", fspath)
    return torch.from_file(fspath, shared=True, size=count, dtype=dtype).view(shape)


# --- sharing -----------------------------------------------------------------


def share_memory(entity):
    """Move every tensor of entity to shared memory (share_memory_()), as
    GraphLearn-for-PyTorch's share_memory does; entity is a tensor, or a
    dict, list or tuple of them, nested as deep as it likes; None and other
    values are left alone.

    Empty tensors are NOT moved (share_memory_() on an empty tensor may make
    processes hang). This function never spills, and a tensor that is
    already disk-backed is left alone: share_memory_() on it would copy every
    byte into /dev/shm, quietly undoing the spill. Returns None.
    """
    torch = _torch()
    if entity is None:
        return None
    if isinstance(entity, torch.Tensor):
        if entity.numel() != 0 and not is_disk_backed(entity):
            entity.share_memory_()
    elif isinstance(entity, Mapping):
        for value in entity.values():
            share_memory(value)
    elif isinstance(entity, (list, tuple)):
        for value in entity:
            share_memory(value)
    return None


def share_memory_for_ipc(entity):
    """Prepare tensors to cross a process boundary, spilling instead of
    copying.

    Same intent as share_memory(), for values that will be pickled to another
    process: each tensor large enough is spilled first
    (spill_tensor_to_disk()), and a spilled tensor pickles as its file path
    (ipc.py), so its bytes never transit /dev/shm. Tensors that are not
    spilled (spilling disabled, below the threshold, empty) go to shared
    memory exactly as share_memory() moves them, which pickles by handle.

    Returns a NEW dict (list, tuple; or the tensor for a tensor) with the
    spilled tensors in place of the originals; the input container is left
    alone, since the caller usually still holds the tensors and dropping
    them is its decision.
    """
    from . import ipc

    torch = _torch()
    ipc.register()
    if isinstance(entity, torch.Tensor):
        spilled = spill_tensor_to_disk(entity) if entity.numel() != 0 else None
        if spilled is not None:
            return spilled
        share_memory(entity)
        return entity
    if isinstance(entity, Mapping):
        return {key: share_memory_for_ipc(value) for key, value in entity.items()}
    if isinstance(entity, list):
        return [share_memory_for_ipc(value) for value in entity]
    if isinstance(entity, tuple):
        return tuple(share_memory_for_ipc(value) for value in entity)
    return entity
