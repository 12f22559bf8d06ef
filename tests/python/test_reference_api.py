"""test_reference_api.py: proves spillway's reference API (the functions of
gigl.utils.share_memory, tools/python/spillway/sharing.py) against the
reference's documented statements, one test per statement that can be
checked, with the shim preloaded (SPILLWAY_POLICY=anon, so tensors torch
allocates start in RAM as they would without spilling; threshold 1 MiB).
Each test's docstring quotes the statement it checks. The cross-process
statements are test_reference_ipc.py; the behaviour without the shim is
test_reference_not_preloaded.py."""

import gc
import os
import pickle
import resource
import unittest
from multiprocessing.reduction import ForkingPickler

import torch

import spillway
from support import (MiB, MemoryCgroup, empty_spill_dir, eventually, file_cached_bytes, run_python,
                     spill_dir)

SHAPE = (1024, 1024)  # float32: 4 MiB, above the 1 MiB threshold, below [shm] min_size
NBYTES = 4 * MiB


def mapping_of(addr):
    """(path, {smaps field: kB}) of the mapping holding addr, from /proc/self/smaps."""
    with open("/proc/self/smaps") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        head = line.split(None, 5)
        if "-" not in head[0] or head[0].endswith(":"):
            continue
        low, high = (int(v, 16) for v in head[0].split("-"))
        if low <= addr < high:
            fields = {}
            for more in lines[i + 1:]:
                key, _, rest = more.partition(":")
                if " " in key or not rest.strip().endswith("kB"):
                    if key == "VmFlags":
                        break
                    continue
                fields[key] = int(rest.split()[0])
            return (head[5] if len(head) > 5 else ""), fields
    return None, {}


def exports():
    return sorted(n for n in os.listdir(spill_dir()) if n.startswith("spillway-export-"))


class AllocateDiskBacked(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_an_empty_writable_tensor_whose_bytes_live_in_a_file(self):
        """'An EMPTY writable tensor whose bytes live in a file'."""
        t = spillway.allocate_disk_backed(SHAPE, torch.float32)
        self.assertEqual((tuple(t.shape), t.dtype), (SHAPE, torch.float32))
        self.assertTrue(spillway.is_disk_backed(t))
        path, _ = mapping_of(t.data_ptr())
        self.assertTrue(path.startswith(spill_dir() + "/"), path)  # the unnamed file, named since
        self.assertTrue(spillway.has_live_mapping(os.path.join(spill_dir(), exports()[0])))
        self.assertEqual(float(t.abs().sum()), 0.0)  # a fresh reserved file reads as zeros
        t.fill_(3.0)
        self.assertEqual(float(t.sum()), 3.0 * t.numel())

    def test_its_bytes_never_occupy_anonymous_memory(self):
        """'allocating the destination as the file from the start means those
        bytes never occupy anonymous memory at all' (torch.empty, for contrast,
        does under this test's anon policy)."""
        t = spillway.allocate_disk_backed(SHAPE, torch.float32)
        t.fill_(1.0)
        _, disk = mapping_of(t.data_ptr())
        self.assertGreaterEqual(disk["Rss"], NBYTES // 1024)
        self.assertEqual(disk["Anonymous"], 0)
        ram = torch.empty(SHAPE)
        ram.fill_(1.0)
        _, anon = mapping_of(ram.data_ptr())
        self.assertGreaterEqual(anon["Anonymous"], NBYTES // 1024)

    def test_blocks_are_reserved_up_front(self):
        """'Blocks are RESERVED up front with posix_fallocate rather than left
        sparse': the file holds its blocks before a byte is written."""
        t = spillway.allocate_disk_backed(SHAPE, torch.float32)
        path = exports()[0]
        st = os.stat(os.path.join(spill_dir(), path))
        self.assertEqual(st.st_size, NBYTES)
        self.assertGreaterEqual(st.st_blocks * 512, NBYTES)
        del t

    def test_none_below_the_size_threshold(self):
        """'Returns None whenever ... below the size threshold'."""
        self.assertIsNone(spillway.allocate_disk_backed((1000,), torch.float32))
        self.assertIsNone(spillway.allocate_disk_backed((0, 5), torch.float32))

    def test_none_for_a_quantized_dtype(self):
        """'Returns None whenever ... quantized dtype'."""
        for dtype in (torch.qint8, torch.quint8, torch.qint32):
            self.assertIsNone(spillway.allocate_disk_backed(SHAPE, dtype))
        self.assertIsNotNone(spillway.allocate_disk_backed(SHAPE, torch.bfloat16))

    def test_none_when_there_is_no_room_to_reserve(self):
        """'Returns None whenever ... no room to reserve': a reservation the
        kernel refuses (RLIMIT_FSIZE below the size: fallocate fails with EFBIG,
        as on a full filesystem) gives None, not an unreserved mapping."""
        code = "\n".join([
            "import torch, spillway",
            "print(spillway.allocate_disk_backed((4096, 4096), torch.float32) is None,",
            "      spillway.allocate_disk_backed((256, 1024), torch.float32) is not None)",
        ])

        def limit_file_size():  # 16 MiB: the 64 MiB tensor cannot be reserved, 1 MiB can
            resource.setrlimit(resource.RLIMIT_FSIZE, (16 * MiB, 16 * MiB))

        status, out, err = run_python(code, preexec_fn=limit_file_size)
        self.assertEqual(status, 0, err)
        self.assertEqual(out.split(), ["True", "True"])


class SpillingDisabled(unittest.TestCase):
    """One child whose spill directory the shim refuses (tmpfs), which
    disables spilling; every test of the class reads its one line."""

    @classmethod
    def setUpClass(cls):
        env = dict(os.environ, SPILLWAY_DIR="/dev/shm/spillway-test-pyapi-unusable")
        code = "\n".join([
            "import torch, spillway",
            "t = torch.ones(1024, 1024)",
            "p = spillway.allocate_preshared((1024, 1024), torch.float32)",
            "a = p.data_ptr(); p.share_memory_()",
            "print(spillway.is_tensor_spilling_enabled(),",
            "      spillway.allocate_disk_backed((1024, 1024), torch.float32),",
            "      spillway.spill_tensor_to_disk(t), spillway.is_disk_backed(p), p.is_shared(),",
            "      p.data_ptr() == a)",
        ])
        status, out, err = run_python(code, env=env)
        if status != 0:
            raise RuntimeError(err)
        cls.out = out.split()

    def test_none_when_spilling_is_disabled(self):
        """allocate_disk_backed: 'Returns None whenever ... spilling disabled';
        spill_tensor_to_disk: 'None covers every reason not to spill –
        spilling disabled'; is_tensor_spilling_enabled() is False."""
        self.assertEqual(self.out[:3], ["False", "None", "None"])

    def test_the_shared_memory_home_is_immune_to_share_memory(self):
        """allocate_preshared: 'Both homes here are immune to that copy': with
        no file to be had, shared memory allocated directly, which torch's own
        share_memory_() finds already shared and does not copy."""
        self.assertEqual(self.out[3:], ["False", "True", "True"])


class AllocatePreshared(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_below_the_threshold_a_plain_tensor(self):
        """'Below the spill threshold returns a plain tensor'."""
        t = spillway.allocate_preshared((1000,), torch.float32)
        self.assertFalse(t.is_shared())
        self.assertFalse(spillway.is_disk_backed(t))
        self.assertEqual(spillway.backing(t), None)  # a small allocation: mimalloc's

    def test_disk_first_for_a_destination_written_in_order(self):
        """'Disk-first for a destination written in order' ... 'a spill file
        (consumers that check is_disk_backed() leave it alone)'."""
        t = spillway.allocate_preshared(SHAPE, torch.float32)
        self.assertTrue(spillway.is_disk_backed(t))
        address = t.data_ptr()
        spillway.share_memory(t)
        self.assertEqual(t.data_ptr(), address)

    def test_random_access_prefers_memory_that_share_memory_does_not_copy(self):
        """'A scatter destination prefers memory' ... 'POSIX shared memory
        allocated directly (share_memory_() then finds it already shared and
        does nothing)'. Here a memfd, so /dev/shm's size does not bind it."""
        t = spillway.allocate_preshared(SHAPE, torch.float32, random_access=True)
        self.assertFalse(spillway.is_disk_backed(t))
        self.assertTrue(t.is_shared())
        path, _ = mapping_of(t.data_ptr())
        self.assertTrue(path.startswith("/memfd:"), path)
        address = t.data_ptr()
        t.share_memory_()  # torch's own method, as GLT's Graph.__init__ calls it
        self.assertEqual(t.data_ptr(), address)
        t.fill_(2.0)
        self.assertEqual(float(t.sum()), 2.0 * t.numel())


class RandomAccessWithoutHeadroom(unittest.TestCase):
    def test_a_file_is_the_checked_loudly_logged_fallback(self):
        """allocate_preshared: 'With random_access=True a file is only the
        checked, loudly-logged fallback for when memory will not hold the
        tensor': in a child limited to 1 GiB by a memory cgroup, 768 MiB
        (plus the shim's 256 MiB memory_reserve) does not fit, so it goes to
        a spill file with MADV_RANDOM and a warning; 16 MiB still fits and
        is shared memory."""
        code = "\n".join([
            "import torch, spillway",
            "def vmflags(addr):",
            "    owner = None",
            "    for line in open('/proc/self/smaps'):",
            "        head = line.split()[0]",
            "        if '-' in head and not head.endswith(':'):",
            "            low, high = (int(v, 16) for v in head.split('-'))",
            "            owner = low <= addr < high",
            "        elif owner and line.startswith('VmFlags:'):",
            "            return line.split()[1:]",
            "small = spillway.allocate_preshared((4 << 20,), torch.float32, random_access=True)",
            "big = spillway.allocate_preshared((192 << 20,), torch.float32, random_access=True)",
            "print(spillway.is_disk_backed(small), small.is_shared(),",
            "      spillway.is_disk_backed(big), big.is_shared(), 'rr' in vmflags(big.data_ptr()))",
        ])
        cgroup = MemoryCgroup(1 << 30)
        try:
            status, out, err = run_python(code, preexec_fn=cgroup.join)
        finally:
            cgroup.close()
        self.assertEqual(status, 0, err)
        self.assertEqual(out.split(), ["False", "True", "True", "False", "True"])
        self.assertIn("went to a spill file because the cgroup has no headroom", err)


class SpillTensorToDisk(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_writes_the_tensor_to_a_file_and_returns_it_mapped(self):
        """'Write tensor to disk and return a tensor mapped over the file';
        'The returned tensor's storage knows its file (is_disk_backed())'.
        The input is left alone (still in RAM, its own memory)."""
        x = torch.arange(NBYTES // 4, dtype=torch.float32).view(SHAPE)
        self.assertEqual(spillway.backing(x), "anon")
        s = spillway.spill_tensor_to_disk(x)
        self.assertTrue(spillway.is_disk_backed(s))
        self.assertTrue(torch.equal(s, x))
        self.assertNotEqual(s.data_ptr(), x.data_ptr())
        self.assertEqual(spillway.backing(x), "anon")
        self.assertEqual(len(exports()), 1)
        s[0, 0] = -1.0
        self.assertEqual(float(x[0, 0]), 0.0)

    def test_a_view_is_spilled_as_its_values(self):
        x = torch.arange(2 * NBYTES // 4, dtype=torch.float32).view(2048, 1024)
        view = x[::2].t()
        s = spillway.spill_tensor_to_disk(view)
        self.assertEqual(tuple(s.shape), tuple(view.shape))
        self.assertTrue(torch.equal(s, view))

    def test_none_below_the_threshold(self):
        """'None covers every reason not to spill – ... tensor below the threshold'."""
        self.assertIsNone(spillway.spill_tensor_to_disk(torch.ones(1000)))
        self.assertIsNone(spillway.spill_tensor_to_disk(torch.ones(0)))
        self.assertEqual(exports(), [])

    def test_share_memory_leaves_it_alone_and_pickling_ships_the_path(self):
        """'share_memory() leaves it alone and pickling ships the path rather
        than the bytes'."""
        s = spillway.spill_tensor_to_disk(torch.ones(SHAPE))
        address = s.data_ptr()
        spillway.share_memory({"s": s})
        self.assertEqual(s.data_ptr(), address)
        self.assertFalse(s.is_shared())
        shipped = bytes(ForkingPickler.dumps(s))
        self.assertLess(len(shipped), 4096)
        self.assertIn(os.fsencode(exports()[0]), shipped)

    def test_a_tensor_the_shim_already_put_on_disk_is_named_in_place(self):
        """A tensor already disk-backed is returned as it is (named, so it
        pickles by path; same address, nothing copied)."""
        x = torch.ones(SHAPE)
        self.assertTrue(spillway.spill(x))  # on disk, but its file has no name
        self.assertEqual(exports(), [])
        s = spillway.spill_tensor_to_disk(x)
        self.assertIs(s, x)
        self.assertEqual(len(exports()), 1)


class LoadSpilledTensor(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_re_maps_without_copying(self):
        """'Re-map a spilled tensor in the current process, without copying its
        bytes anywhere': one page cache, writes seen both ways."""
        s = spillway.spill_tensor_to_disk(torch.arange(NBYTES // 4, dtype=torch.float32))
        path = os.path.join(spill_dir(), exports()[0])
        u = spillway.load_spilled_tensor(path, torch.float32, (NBYTES // 4,))
        self.assertNotEqual(u.data_ptr(), s.data_ptr())
        self.assertTrue(spillway.is_disk_backed(u))
        self.assertTrue(torch.equal(u, s))
        u[5] = -5.0
        self.assertEqual(float(s[5]), -5.0)
        s[6] = -6.0
        self.assertEqual(float(u[6]), -6.0)
        self.assertEqual(mapping_of(u.data_ptr())[0], path)

    def test_value_error_when_the_file_is_the_wrong_size(self):
        """'ValueError – If the file is the wrong size for shape'."""
        s = spillway.spill_tensor_to_disk(torch.ones(SHAPE))
        path = os.path.join(spill_dir(), exports()[0])
        for dtype, shape in [(torch.float32, (1024, 1023)), (torch.float64, SHAPE), (torch.float32, (0,))]:
            with self.assertRaises(ValueError):
                spillway.load_spilled_tensor(path, dtype, shape)
        del s

    def test_os_error_when_the_file_cannot_be_mapped_writable(self):
        """'OSError – If the file cannot be mapped writable' (a directory of the
        right size cannot be; a missing file is FileNotFoundError, an OSError)."""
        directory = os.path.join(spill_dir(), "a-directory")
        os.mkdir(directory)
        size = os.stat(directory).st_size
        with self.assertRaises(OSError):
            spillway.load_spilled_tensor(directory, torch.uint8, (size,))
        with self.assertRaises(FileNotFoundError):
            spillway.load_spilled_tensor(os.path.join(spill_dir(), "missing"), torch.uint8, (4096,))


class PageCache(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_release_page_cache_writes_back_and_drops_the_pages(self):
        """'Write a disk-backed tensor's dirty pages out and ask the kernel to
        drop them'; 'Returns True when every step COMPLETED' (measured: the
        file's pages leave the page cache); 'The mapping stays valid and
        refaults'."""
        t = spillway.allocate_disk_backed(SHAPE, torch.float32)
        t.copy_(torch.arange(NBYTES // 4, dtype=torch.float32).view(SHAPE))
        path = os.path.join(spill_dir(), exports()[0])
        self.assertGreater(file_cached_bytes(path), 0.9 * NBYTES)
        self.assertTrue(spillway.release_page_cache(t))
        self.assertLess(file_cached_bytes(path), 0.05 * NBYTES)
        self.assertTrue(torch.equal(t.view(-1), torch.arange(NBYTES // 4, dtype=torch.float32)))

    def test_views_over_the_same_file_lose_their_cached_pages_too(self):
        """'Operates on the tensor's whole backing file, so views over the same
        file lose their cached pages too'."""
        t = spillway.allocate_disk_backed(SHAPE, torch.float32)
        t.fill_(1.0)
        self.assertTrue(spillway.release_page_cache(t[10:20, 5]))
        self.assertLess(spillway.residency(t), 0.05 * NBYTES)

    def test_release_page_cache_is_false_for_memory(self):
        """'False means the sequence was incomplete': RAM has no page cache to give."""
        self.assertFalse(spillway.release_page_cache(torch.ones(SHAPE)))
        self.assertFalse(spillway.release_page_cache(
            spillway.allocate_preshared(SHAPE, torch.float32, random_access=True)))

    def test_release_by_path_refuses_while_mapped_then_requests_eviction(self):
        """'Refuses when a mapping is still live' (False); 'Returns True if the
        eviction was REQUESTED' once nothing maps it (and the pages go)."""
        t = spillway.allocate_disk_backed(SHAPE, torch.float32)
        t.fill_(1.0)
        path = os.path.join(spill_dir(), exports()[0])
        self.assertTrue(spillway.has_live_mapping(path))
        self.assertFalse(spillway.release_page_cache_by_path(path))
        del t
        gc.collect()
        self.assertTrue(eventually(lambda: not spillway.has_live_mapping(path)))
        self.assertTrue(spillway.release_page_cache_by_path(path))
        self.assertLess(file_cached_bytes(path), 0.05 * NBYTES)

    def test_release_by_path_is_false_when_the_file_cannot_be_opened(self):
        """'False if ... the file could not be opened'."""
        self.assertFalse(spillway.release_page_cache_by_path(os.path.join(spill_dir(), "missing")))


class Queries(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_has_live_mapping_sees_any_mapping_of_this_process(self):
        """'Whether THIS process still maps path, read from /proc/self/maps' ...
        'it sees every mapping over the file no matter who created it'."""
        path = os.path.join(spill_dir(), "made-by-torch")
        with open(path, "wb") as f:
            f.write(b"\0" * NBYTES)
        self.assertFalse(spillway.has_live_mapping(path))
        t = torch.from_file(path, shared=True, size=NBYTES // 4, dtype=torch.float32)
        self.assertTrue(spillway.has_live_mapping(path))
        del t
        gc.collect()
        self.assertFalse(spillway.has_live_mapping(path))

    def test_is_disk_backed_for_a_tensor_and_its_views(self):
        """'Whether tensor (or a view of one) is an mmap over a real file'."""
        t = spillway.allocate_disk_backed((2048, 1024), torch.float32)
        for view in (t, t[100:200], t[:, 7], t.t(), t[::3, ::2], t.view(-1)[12345:]):
            self.assertTrue(spillway.is_disk_backed(view))

    def test_is_disk_backed_for_torch_file_mappings(self):
        """'a storage created by from_file(shared=True)' is disk-backed."""
        path = os.path.join(spill_dir(), "from-file")
        with open(path, "wb") as f:
            f.write(b"\0" * NBYTES)
        t = torch.from_file(path, shared=True, size=NBYTES // 4, dtype=torch.float32)
        self.assertTrue(spillway.is_disk_backed(t))
        self.assertTrue(spillway.is_disk_backed(t[100:]))

    def test_shared_memory_is_not_disk_backed(self):
        """'including tmpfs-shared storages (share_memory_(), _new_shared),
        which are RAM and must not be treated as spilled'; RAM is not either."""
        shared = torch.ones(SHAPE).share_memory_()  # 4 MiB: below [shm] min_size, so /dev/shm
        self.assertTrue(shared.is_shared())
        self.assertFalse(spillway.is_disk_backed(shared))
        new_shared = torch.empty(0).set_(torch.UntypedStorage._new_shared(NBYTES))
        self.assertFalse(spillway.is_disk_backed(new_shared))
        self.assertFalse(spillway.is_disk_backed(torch.ones(SHAPE)))

    def test_is_tensor_spilling_enabled(self):
        """'Whether GIGL_TENSOR_SPILL_DIR is set, i.e. large tensors should go
        to disk': here, the shim with a usable SPILLWAY_DIR (the refused
        directory is test_none_when_spilling_is_disabled)."""
        self.assertTrue(spillway.is_tensor_spilling_enabled())


class PrepareSpillDir(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_clears_leftover_spill_files_of_an_earlier_run_once(self):
        """'Clear leftover spill files, ONCE per run, before anything in the run
        can spill'; 'Idempotent'. The earlier run's spill file goes; a file
        this run spilled after preparing stays. (numpy in the children: the
        spill files are the same, and numpy starts in a fraction of torch's
        time; test_prepare_dir.py has the rest of prepare_spill_dir.)"""
        env = {k: v for k, v in os.environ.items() if k != "SPILLWAY_PREPARED"}
        spill = "import numpy, spillway; a = numpy.ones((1024, 1024)); spillway.export(a)"
        status, _, err = run_python(spill, env=env)
        self.assertEqual(status, 0, err)
        leftover = exports()
        self.assertEqual(len(leftover), 1)
        this_run = "\n".join([
            "import os, spillway",
            "spillway.prepare_spill_dir()",
            spill,
            "spillway.prepare_spill_dir()",
            "print(sorted(n for n in os.listdir(os.environ['SPILLWAY_DIR'])))",
        ])
        status, out, err = run_python(this_run, env=env)
        self.assertEqual(status, 0, err)
        left = eval(out)
        self.assertNotIn(leftover[0], left)
        self.assertEqual(len(left), 1)


class ShareMemory(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_moves_tensors_of_nested_containers_to_shared_memory(self):
        """share_memory(entity) for a tensor, and dicts (and lists) of them,
        nested; returns None."""
        a, b, c = torch.ones(10), torch.ones(SHAPE), torch.ones(3)
        entity = {"a": a, "nested": {"b": b, "list": [c, None, 5]}}
        self.assertIsNone(spillway.share_memory(entity))
        self.assertTrue(a.is_shared() and b.is_shared() and c.is_shared())
        single = torch.ones(4)
        spillway.share_memory(single)
        self.assertTrue(single.is_shared())
        self.assertIsNone(spillway.share_memory(None))

    def test_empty_tensors_are_not_moved(self):
        """'we opt to not move empty tensors to shared memory'."""
        empty = torch.ones(0, 4)
        spillway.share_memory({"e": empty, "l": [empty]})
        self.assertFalse(empty.is_shared())

    def test_never_spills_and_leaves_disk_backed_tensors_alone(self):
        """'This function never spills, and a tensor that is ALREADY disk-backed
        is left alone'."""
        on_disk = spillway.allocate_disk_backed(SHAPE, torch.float32)
        in_ram = torch.ones(SHAPE)
        address = on_disk.data_ptr()
        spillway.share_memory([on_disk, in_ram])
        self.assertEqual(on_disk.data_ptr(), address)
        self.assertFalse(on_disk.is_shared())
        self.assertTrue(in_ram.is_shared())
        self.assertFalse(spillway.is_disk_backed(in_ram))
        self.assertEqual(len(exports()), 1)  # only allocate_disk_backed's


class ShareMemoryForIpc(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_spills_large_tensors_and_shares_the_rest_in_a_new_dict(self):
        """'each value large enough is spilled first'; 'Tensors that are not
        spilled (... below the size threshold) go to POSIX shared memory';
        'Returns a NEW dict; the input is left alone'."""
        big, small, empty = torch.ones(SHAPE), torch.ones(10), torch.ones(0)
        entity = {"big": big, "small": small, "nested": {"empty": empty, "list": [big]}}
        out = spillway.share_memory_for_ipc(entity)
        self.assertIsNot(out, entity)
        self.assertIs(entity["big"], big)
        self.assertEqual(spillway.backing(big), "anon")  # the input's tensor: not spilled in place
        self.assertTrue(spillway.is_disk_backed(out["big"]))
        self.assertTrue(torch.equal(out["big"], big))
        self.assertIs(out["small"], small)
        self.assertTrue(small.is_shared())
        self.assertFalse(empty.is_shared())
        self.assertTrue(spillway.is_disk_backed(out["nested"]["list"][0]))
        self.assertIsInstance(out["nested"]["list"], list)

    def test_a_spilled_tensor_pickles_as_its_path(self):
        """'a spilled tensor pickles as its file path ... so its bytes never
        transit /dev/shm': the pickle is a few hundred bytes naming the file,
        and unpickling maps the same file."""
        out = spillway.share_memory_for_ipc({"t": torch.arange(NBYTES // 4, dtype=torch.float32)})
        data = bytes(ForkingPickler.dumps(out))
        self.assertLess(len(data), 4096)
        back = pickle.loads(data)["t"]
        self.assertTrue(torch.equal(back, out["t"]))
        self.assertNotEqual(back.data_ptr(), out["t"].data_ptr())
        back[0] = -1.0
        self.assertEqual(float(out["t"][0]), -1.0)
        self.assertFalse(out["t"].is_shared())  # torch's reducer would have moved it to shm

    def test_views_and_parameters_keep_their_geometry_across_pickling(self):
        out = spillway.share_memory_for_ipc(torch.arange(2 * NBYTES // 4, dtype=torch.float32))
        for view in (out.view(2048, 1024)[3::2, 5:].t(), out[1:]):
            back = pickle.loads(bytes(ForkingPickler.dumps(view)))
            self.assertEqual(back.stride(), view.stride())
            self.assertTrue(torch.equal(back, view))
        param = torch.nn.Parameter(out.view(2048, 1024))
        back = pickle.loads(bytes(ForkingPickler.dumps(param)))
        self.assertIsInstance(back, torch.nn.Parameter)
        self.assertTrue(back.requires_grad)
        self.assertTrue(torch.equal(back, param))


if __name__ == "__main__":
    unittest.main()
