"""test_reference_not_preloaded.py: proves the reference API of spillway
(tools/python/spillway/sharing.py) without the shim (LD_PRELOAD empty),
where it behaves as the reference does with spilling disabled
(GIGL_TENSOR_SPILL_DIR unset): is_tensor_spilling_enabled() is False,
allocate_disk_backed and spill_tensor_to_disk return None, allocate_preshared
gives a plain tensor below the shim's default threshold (64 MiB) and shared
memory above it, share_memory and share_memory_for_ipc move tensors to
shared memory (never empty ones, never file-backed ones); and the parts that
need no shim still work: load_spilled_tensor maps a file with
torch.from_file (no copy; ValueError on a wrong size), has_live_mapping and
is_disk_backed read /proc/self/maps. release_page_cache and
release_page_cache_by_path answer False (the shim does the releasing)."""

import os
import unittest

import torch

import spillway
from support import MiB, empty_spill_dir, shim_in_process, spill_dir

SHAPE = (1024, 1024)  # float32: 4 MiB


def write_file(name, nbytes, value=0):
    path = os.path.join(spill_dir(), name)
    torch.full((nbytes // 4,), float(value)).numpy().tofile(path)
    return path


class WithoutTheShim(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shim_in_process():
            raise RuntimeError("test_reference_not_preloaded.py must run without libspillway")

    def setUp(self):
        empty_spill_dir()

    def test_spilling_is_disabled_and_spilling_functions_return_none(self):
        self.assertFalse(spillway.is_tensor_spilling_enabled())
        self.assertIsNone(spillway.allocate_disk_backed(SHAPE, torch.float32))
        self.assertIsNone(spillway.allocate_disk_backed((8192, 8192), torch.float32))
        t = torch.ones(8192, 4096)
        self.assertIsNone(spillway.spill_tensor_to_disk(t))
        self.assertEqual(os.listdir(spill_dir()), [])

    def test_allocate_preshared_plain_below_the_default_threshold_shared_above(self):
        small = spillway.allocate_preshared(SHAPE, torch.float32)
        self.assertFalse(small.is_shared())
        for random_access in (False, True):
            big = spillway.allocate_preshared((64 * MiB // 4,), torch.float32, random_access)
            self.assertTrue(big.is_shared())
            self.assertFalse(spillway.is_disk_backed(big))
            address = big.data_ptr()
            big.share_memory_()
            self.assertEqual(big.data_ptr(), address)

    def test_share_memory_and_for_ipc_move_to_shared_memory(self):
        a, empty = torch.ones(SHAPE), torch.ones(0)
        spillway.share_memory({"a": [a, empty]})
        self.assertTrue(a.is_shared())
        self.assertFalse(empty.is_shared())
        b = torch.ones(SHAPE)
        entity = {"b": b, "e": empty}
        out = spillway.share_memory_for_ipc(entity)
        self.assertIsNot(out, entity)
        self.assertIs(out["b"], b)
        self.assertTrue(b.is_shared())
        self.assertFalse(empty.is_shared())

    def test_load_spilled_tensor_maps_the_file_without_a_copy(self):
        path = write_file("spilled", 4 * MiB, 3)
        t = spillway.load_spilled_tensor(path, torch.float32, SHAPE)
        self.assertEqual(float(t[5, 5]), 3.0)
        self.assertTrue(spillway.is_disk_backed(t))
        self.assertTrue(spillway.has_live_mapping(path))
        t[0, 0] = -1.0  # MAP_SHARED: the write is the file's
        u = spillway.load_spilled_tensor(path, torch.float32, SHAPE)
        self.assertEqual(float(u[0, 0]), -1.0)
        with self.assertRaises(ValueError):
            spillway.load_spilled_tensor(path, torch.float32, (1024, 1023))
        del t, u
        self.assertFalse(spillway.has_live_mapping(path))

    def test_share_memory_leaves_a_file_backed_tensor_alone(self):
        path = write_file("mapped", 4 * MiB)
        t = torch.from_file(path, shared=True, size=1 << 20, dtype=torch.float32)
        self.assertTrue(spillway.is_disk_backed(t))
        address = t.data_ptr()
        spillway.share_memory([t])
        self.assertEqual(t.data_ptr(), address)
        shared = torch.ones(SHAPE).share_memory_()
        self.assertFalse(spillway.is_disk_backed(shared))

    def test_page_cache_functions_answer_false(self):
        path = write_file("cached", 4 * MiB)
        t = torch.from_file(path, shared=True, size=1 << 20, dtype=torch.float32)
        self.assertFalse(spillway.release_page_cache(t))
        del t
        self.assertFalse(spillway.release_page_cache_by_path(path))
        self.assertIsNone(spillway.prepare_spill_dir())
        self.assertTrue(os.path.exists(path))


if __name__ == "__main__":
    unittest.main()
