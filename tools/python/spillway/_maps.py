"""spillway._maps: answers read from /proc/self/maps, the kernel's own list
of this process's mappings, for memory the shim did not map itself (a
torch.from_file storage, a tensor re-mapped in a process without the shim).

Without /proc (not Linux) every answer is False: spilling is Linux-only and
refuses gracefully elsewhere.
"""

import ctypes
import os

# statfs(2) f_type of filesystems whose pages are RAM: a mapping over a file
# there is shared memory, not a spill.
_RAM_FILESYSTEMS = (0x01021994, 0x858458F6, 0x958458F6)  # tmpfs, ramfs, hugetlbfs
_DELETED = " (deleted)"


def _lines():
    try:
        with open("/proc/self/maps") as f:
            return f.read().splitlines()
    except OSError:
        return []


def _fields(line):
    """(low, high, 'major:minor', inode, path) of one maps line."""
    parts = line.split(None, 5)
    low, high = (int(v, 16) for v in parts[0].split("-"))
    path = parts[5] if len(parts) > 5 else ""
    return low, high, parts[3], int(parts[4]), path


def _on_ram_filesystem(path):
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(256)  # struct statfs; f_type (a long) comes first
    for candidate in (path, os.path.dirname(path)):
        if libc.statfs(os.fsencode(candidate), buf) == 0:
            return ctypes.c_long.from_buffer(buf).value in _RAM_FILESYSTEMS
    return False  # neither the file nor its directory is there any more: cannot tell


def file_on_disk_at(addr):
    """Whether addr lies in a mapping of a file on a real filesystem (not
    tmpfs, /dev/shm or a memfd, which are RAM)."""
    for line in _lines():
        low, high, _, inode, path = _fields(line)
        if not low <= addr < high:
            continue
        if inode == 0 or not path.startswith("/") or path.startswith(("/memfd:", "/dev/shm/")):
            return False
        if path.endswith(_DELETED):
            path = path[: -len(_DELETED)]
        return not _on_ram_filesystem(path)
    return False


_AT_FDCWD, _STATX_MNT_ID, _STX_MNT_ID_OFFSET = -100, 0x1000, 144  # struct statx's stx_mnt_id


def _maps_device(path, st_dev):
    """The device /proc/self/maps shows for the file at path: st_dev, except
    on btrfs, which gives each subvolume a device of its own (stat shows it)
    while maps shows the superblock's, as mountinfo does for the file's
    mount (shim/common/maps_device.h). A block device's filesystem is
    answered from st_dev alone."""
    if os.major(st_dev) != 0:
        return st_dev
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(256)  # struct statx
        if libc.statx(_AT_FDCWD, os.fsencode(path), 0, _STATX_MNT_ID, buf) != 0:
            return st_dev
        if not ctypes.c_uint32.from_buffer(buf).value & _STATX_MNT_ID:
            return st_dev
        mnt_id = ctypes.c_uint64.from_buffer(buf, _STX_MNT_ID_OFFSET).value
        with open("/proc/self/mountinfo") as f:
            for line in f:  # "ID PARENT MAJOR:MINOR ROOT ..."
                fields = line.split(None, 3)
                if len(fields) > 2 and fields[0] == str(mnt_id):
                    major, minor = (int(v) for v in fields[2].split(":"))
                    return os.makedev(major, minor)
    except (OSError, AttributeError, ValueError):
        pass  # no statx in this libc, no /proc: stat's device
    return st_dev


def maps_file(path):
    """Whether this process maps the file at path, compared by device and
    inode (one file has many spellings of its path)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    dev = _maps_device(path, st.st_dev)
    want = (os.major(dev), os.minor(dev))
    for line in _lines():
        _, _, dev, inode, _ = _fields(line)
        if inode == st.st_ino and tuple(int(v, 16) for v in dev.split(":")) == want:
            return True
    return False
