"""test_reference_ipc.py: proves the reference's cross-process statements
for spillway's share_memory_for_ipc (tools/python/spillway/ipc.py), with
the shim preloaded (SPILLWAY_POLICY=anon: tensors start in RAM; threshold
1 MiB), under the `spawn` and `fork` start methods:

* 'each value large enough is spilled first, and a spilled tensor pickles
  as its file path, so its bytes never transit /dev/shm': a tensor sent
  through a torch.multiprocessing queue is mapped, in the receiver, from the
  spill file itself (its /proc/self/maps line), no /dev/shm or memfd mapping
  holds it, the sender's tensor is not moved to shared memory, and writes
  are seen both ways (one page cache, not a copy). For contrast, an
  ordinary tensor sent the same way arrives in /dev/shm.
* the same through a DataLoader worker's pipe (batch_size=None, so the
  worker's tensor is sent as it is), with fork and spawn workers;
* a receiver without the shim maps the file with torch.from_file.
"""

import os
import unittest

import torch
import torch.multiprocessing as mp

import spillway
from support import empty_spill_dir, spill_dir

SHAPE = (1024, 1024)  # float32: 4 MiB, below [shm] min_size so torch's copy lands in /dev/shm


def pattern():
    return torch.arange(SHAPE[0] * SHAPE[1], dtype=torch.float32).view(SHAPE)


def where(addr):
    """The path of the mapping holding addr in this process."""
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            low, high = (int(v, 16) for v in parts[0].split("-"))
            if low <= addr < high:
                return parts[5].strip() if len(parts) > 5 else ""
    return None


def shm_kib_mapped():
    """KiB of this process's mappings over /dev/shm or a memfd (shared
    memory), counting only those of 1 MiB or more (multiprocessing's
    semaphores live in /dev/shm too, a page each)."""
    total = 0
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            path = parts[5].strip() if len(parts) > 5 else ""
            low, high = (int(v, 16) for v in parts[0].split("-"))
            if path.startswith(("/dev/shm/", "/memfd:")) and high - low >= 1 << 20:
                total += (high - low) // 1024
    return total


def receiver(inbox, outbox):
    """The other process: receives {"ours": ..., "ordinary": ...}, reports
    where each is mapped, writes row 1 of ours, and waits to be let go (so
    its mappings live while the sender checks)."""
    shm_before = shm_kib_mapped()
    got = inbox.get()
    ours, ordinary = got["ours"], got.get("ordinary")
    report = {
        "shm_kib_delta": shm_kib_mapped() - shm_before,
        "ours_where": where(ours.data_ptr()),
        "ours_equal": bool(torch.equal(ours, pattern())),
        "ours_disk": spillway.is_disk_backed(ours),
        "shim": spillway.is_active(),
    }
    if ordinary is not None:
        report["ordinary_where"] = where(ordinary.data_ptr())
        report["ordinary_equal"] = bool(torch.equal(ordinary, pattern()))
    ours[1] = 7.0
    outbox.put(report)
    inbox.get()


class SpilledSamples(torch.utils.data.Dataset):
    """A DataLoader dataset whose samples are born on disk in the worker."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        t = spillway.allocate_disk_backed(SHAPE, torch.float32)
        t.copy_(pattern() + i)
        return t


def exports():
    return sorted(n for n in os.listdir(spill_dir()) if n.startswith("spillway-export-"))


class AcrossAQueue(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def send(self, method, with_ordinary=True, env=None):
        ctx = mp.get_context(method)
        inbox, outbox = ctx.Queue(), ctx.Queue()
        saved = dict(os.environ)
        os.environ.update(env or {})
        try:
            peer = ctx.Process(target=receiver, args=(inbox, outbox))
            peer.start()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        try:
            ordinary = pattern()
            shipped = spillway.share_memory_for_ipc({"ours": pattern()})
            message = dict(shipped, ordinary=ordinary) if with_ordinary else shipped
            inbox.put(message)
            report = outbox.get(timeout=120)
            # The peer's write, seen here: the same page cache, not a copy.
            self.assertTrue(bool((shipped["ours"][1] == 7.0).all()))
            self.assertFalse(shipped["ours"].is_shared())  # not moved into shared memory
            if with_ordinary:
                self.assertTrue(ordinary.is_shared())  # torch's reducer moved this one
            return report, shipped
        finally:
            inbox.put("done")
            peer.join(60)
            self.assertEqual(peer.exitcode, 0)

    def check(self, report, shim=True):
        path = os.path.join(spill_dir(), exports()[0])
        self.assertEqual(len(exports()), 1)
        self.assertTrue(report["ours_equal"])
        self.assertTrue(report["ours_disk"])
        self.assertEqual(report["shim"], shim)
        # Mapped from the spill file (by the shim under its own name; by
        # torch.from_file under the path), never from /dev/shm or a memfd.
        self.assertTrue(report["ours_where"].startswith(spill_dir() + "/"), report["ours_where"])
        if not shim:
            self.assertEqual(report["ours_where"], path)

    def test_spawn(self):
        report, _ = self.send("spawn")
        self.check(report)
        self.assertTrue(report["ordinary_where"].startswith("/dev/shm/"), report["ordinary_where"])
        self.assertTrue(report["ordinary_equal"])
        self.assertGreaterEqual(report["shm_kib_delta"], 4096)  # the ordinary one's copy

    def test_fork(self):
        report, _ = self.send("fork", with_ordinary=False)
        self.check(report)
        self.assertEqual(report["shm_kib_delta"], 0)

    def test_spawn_to_a_receiver_without_the_shim(self):
        report, _ = self.send("spawn", with_ordinary=False, env={"LD_PRELOAD": ""})
        self.check(report, shim=False)
        self.assertEqual(report["shm_kib_delta"], 0)


class ThroughADataLoaderWorker(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def load(self, method):
        loader = torch.utils.data.DataLoader(SpilledSamples(), batch_size=None, num_workers=1,
                                             multiprocessing_context=method)
        before = shm_kib_mapped()
        for i, sample in enumerate(loader):
            self.assertTrue(torch.equal(sample, pattern() + i))
            self.assertTrue(spillway.is_disk_backed(sample))
            self.assertTrue(where(sample.data_ptr()).startswith(spill_dir() + "/"))
            self.assertEqual(shm_kib_mapped(), before)
        self.assertEqual(len(exports()), 2)

    def test_fork_worker(self):
        self.load("fork")

    def test_spawn_worker(self):
        self.load("spawn")


if __name__ == "__main__":
    unittest.main()
