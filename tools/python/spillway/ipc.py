"""spillway.ipc: a spilled tensor crosses a process boundary by its file's
path, not by its bytes.

torch.multiprocessing pickles a CPU tensor by moving its storage to shared
memory first (share_memory_(): a full copy into /dev/shm, or into a spill
file when the shim redirects /dev/shm) and sending a handle. register()
puts a reducer in front of torch's for torch.Tensor and nn.Parameter in
multiprocessing's ForkingPickler (what torch.multiprocessing queues, pipes
and DataLoader workers use): a tensor that lives in a NAMED spill file
(allocate_disk_backed, spill_tensor_to_disk, share_memory_for_ipc,
load_spilled_tensor, export) is sent as (path, dtype, offset, size, stride)
and re-mapped on the other side, MAP_SHARED over the same page cache:
nothing is copied and writes are seen both ways. Every other tensor goes to
torch's own reducer, unchanged (a tensor the shim merely placed on disk is
NOT named for this: a name outlives the process, until the next run's
prepare_spill_dir()).

The receiver maps the file with the shim when it is preloaded there (a
region of its own), else with torch.from_file. It needs `spillway`
importable; unpickling imports it, which registers the reducer there too.

Invariant: the path is sent only for a file the shim already named
(spillway_file_path), never guessed from a tensor that merely looks spilled.
"""

import ctypes
import os
import threading

from . import _is_torch_tensor, _live

_lock = threading.Lock()
_torch_reduce_tensor = None


def register():
    """Install the path-sending reducer in ForkingPickler (idempotent).
    Called by every function of spillway.sharing and when spillway is
    imported after torch."""
    global _torch_reduce_tensor
    with _lock:
        if _torch_reduce_tensor is not None:
            return
        import torch
        import torch.multiprocessing.reductions as reductions  # registers torch's first
        from multiprocessing.reduction import ForkingPickler

        _torch_reduce_tensor = reductions.reduce_tensor
        for cls in (torch.Tensor, torch.nn.parameter.Parameter):
            ForkingPickler.register(cls, _reduce_tensor)


def _named_file_of(tensor):
    """(path, file size, byte offset of the tensor's storage offset 0 in the
    file) when tensor lives in a named spill file of the shim, else None."""
    api = _live()
    if api is None or api.file_path is None or api.region is None:
        return None
    if tensor.device.type != "cpu" or str(tensor.layout) != "torch.strided" or tensor.numel() == 0:
        return None
    if tensor.requires_grad and not tensor.is_leaf:
        return None  # torch's reducer refuses it, with its own message
    esize = tensor.element_size()
    storage_start = tensor.data_ptr() - tensor.storage_offset() * esize
    buf = ctypes.create_string_buffer(4096)
    if api.file_path(tensor.data_ptr(), buf, len(buf)) != 0:
        return None
    start, size = ctypes.c_void_p(), ctypes.c_size_t()
    if api.region(tensor.data_ptr(), ctypes.byref(start), ctypes.byref(size)) != 0:
        return None
    offset = storage_start - (start.value or 0)
    if offset < 0:
        return None  # the storage begins before the region: not one allocation of ours
    return os.fsdecode(buf.value), size.value, offset


def _reduce_tensor(tensor):
    named = _named_file_of(tensor) if _is_torch_tensor(tensor) else None
    if named is None:
        return _torch_reduce_tensor(tensor)
    path, file_size, offset = named
    return (_rebuild_from_file, (type(tensor), path, file_size, offset, tensor.dtype,
                                 tensor.storage_offset(), tuple(tensor.size()),
                                 tuple(tensor.stride()), tensor.requires_grad))


def _rebuild_from_file(cls, path, file_size, offset, dtype, storage_offset, size, stride,
                       requires_grad):
    """The other side: map the whole file once, then the tensor's view of it."""
    import torch

    register()
    esize = torch.empty(0, dtype=dtype).element_size()
    if offset % esize == 0 and file_size % esize == 0:
        base = _map_whole_file(path, file_size, dtype)
        tensor = base.as_strided(size, stride, offset // esize + storage_offset)
    else:  # a storage that does not start on an element boundary of the file
        base = _map_whole_file(path, file_size, torch.uint8)
        span = (1 + sum((n - 1) * s for n, s in zip(size, stride))) * esize
        start = offset + storage_offset * esize
        tensor = base[start:start + span].view(dtype).as_strided(size, stride)
    if cls is torch.nn.parameter.Parameter:
        return torch.nn.parameter.Parameter(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_(requires_grad)


def _map_whole_file(path, file_size, dtype):
    import torch

    from . import load

    count = file_size // torch.empty(0, dtype=dtype).element_size()
    mapped = load(path, dtype, (count,)) if _live() is not None else None
    if mapped is None:
        mapped = torch.from_file(path, shared=True, size=count, dtype=dtype)
    return mapped
