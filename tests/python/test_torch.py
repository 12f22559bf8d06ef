"""test_torch.py: proves the helper on PyTorch CPU tensors with the shim
preloaded (SPILLWAY_POLICY=disk, threshold 1 MiB): tensors torch allocates
(posix_memalign in libc10) and their views (slices, columns, transposes,
strided) are disk-backed; residency over 90% after writing, under 5% after
release, data intact after refault; export and load without a copy for any
torch dtype, numpy-less ones included (bfloat16), writes visible both ways,
the mapping freed with the last tensor over it; and each refusal: small or
sparse tensors, a wrong shape or dtype (ValueError), a missing file."""

import gc
import os
import unittest

import torch

import spillway
from support import MiB, empty_spill_dir, eventually, spill_dir, torch_pattern

SHAPE = (4096, 4096)  # float32: 64 MiB, a whole number of pages


class TorchQueries(unittest.TestCase):
    def test_large_tensor_and_its_views_are_disk_backed(self):
        t = torch.zeros(SHAPE)
        for name, view in [("tensor", t), ("rows", t[100:200]), ("column", t[:, 7]),
                           ("transposed", t.t()), ("strided", t[::3, ::2]),
                           ("flat tail", t.view(-1)[12345:])]:
            with self.subTest(view=name):
                self.assertTrue(spillway.is_disk_backed(view))
                self.assertEqual(spillway.backing(view), "disk")

    def test_small_sparse_and_empty_tensors_are_not(self):
        small = torch.zeros(1000)
        self.assertFalse(spillway.is_disk_backed(small))
        self.assertFalse(spillway.release_page_cache(small))
        self.assertIsNone(spillway.export(small))
        sparse = torch.zeros(SHAPE).to_sparse()
        self.assertFalse(spillway.is_disk_backed(sparse))
        self.assertIsNone(spillway.residency(sparse))
        empty = torch.zeros(0, 4)
        self.assertFalse(spillway.is_disk_backed(empty))
        self.assertEqual(spillway.residency(empty), 0)


class TorchPageCache(unittest.TestCase):
    def test_written_released_refaulted(self):
        t = torch_pattern(SHAPE, 1)
        nbytes = t.numel() * t.element_size()
        self.assertGreater(spillway.residency(t), 0.9 * nbytes)
        self.assertTrue(spillway.release_page_cache(t))
        self.assertLess(spillway.residency(t), 0.05 * nbytes)
        self.assertTrue(torch.equal(t, torch_pattern(SHAPE, 1)))  # refaults intact
        self.assertGreater(spillway.residency(t), 0.9 * nbytes)

    def test_release_through_a_view(self):
        t = torch_pattern(SHAPE, 2)
        self.assertTrue(spillway.release_page_cache(t[:, 100]))
        self.assertLess(spillway.residency(t), 0.05 * 64 * MiB)
        self.assertTrue(torch.equal(t, torch_pattern(SHAPE, 2)))

    def test_residency_of_a_view_counts_its_span_only(self):
        t = torch.ones(SHAPE)
        self.assertEqual(spillway.residency(t[256:512]), 4 * MiB)


class TorchExportLoad(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_load_maps_without_a_copy_and_shares_writes(self):
        t = torch_pattern(SHAPE, 3)
        path = spillway.export(t[5:])  # a view exports its storage
        self.assertTrue(os.path.basename(path).startswith("spillway-export-"))
        u = spillway.load(path, torch.float32, SHAPE)
        self.assertEqual(tuple(u.shape), SHAPE)
        self.assertEqual(u.dtype, torch.float32)
        self.assertNotEqual(u.data_ptr(), t.data_ptr())
        self.assertEqual(u.data_ptr() % (2 * MiB), 0)  # the start of a mapping, not a copy
        self.assertTrue(spillway.is_disk_backed(u))
        self.assertTrue(torch.equal(t, u))
        u[0, 0] = -1.0
        self.assertEqual(float(t[0, 0]), -1.0)
        t[1, 1] = -2.0
        self.assertEqual(float(u[1, 1]), -2.0)
        del t, u
        os.unlink(path)

    def test_load_any_torch_dtype_over_the_same_bytes(self):
        t = torch_pattern(SHAPE, 4)
        path = spillway.export(t)
        as_bf16 = spillway.load(path, torch.bfloat16, (2 * 4096, 4096))  # numpy has no bfloat16
        self.assertEqual(as_bf16.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(as_bf16.view(torch.float32).view(SHAPE), t))
        as_bytes = spillway.load(path, torch.uint8, (64 * MiB,))
        self.assertEqual(as_bytes.data_ptr() % (2 * MiB), 0)
        del t, as_bf16, as_bytes
        os.unlink(path)

    def test_the_mapping_lives_as_long_as_a_view_of_it(self):
        t = torch_pattern(SHAPE, 5)
        path = spillway.export(t)
        del t
        gc.collect()
        u = spillway.load(path, torch.float32, SHAPE)
        view = u[10:20, 3:7]
        del u
        gc.collect()
        self.assertTrue(spillway.has_live_mapping(path))
        self.assertTrue(torch.equal(view, torch_pattern(SHAPE, 5)[10:20, 3:7]))
        del view
        gc.collect()
        self.assertTrue(eventually(lambda: not spillway.has_live_mapping(path)))
        self.assertTrue(spillway.release_page_cache_by_path(path))
        os.unlink(path)

    def test_load_refuses_a_wrong_shape_or_dtype(self):
        t = torch.zeros(SHAPE)
        path = spillway.export(t)
        for dtype, shape in [(torch.float32, (4096, 4095)), (torch.float64, SHAPE),
                             (torch.float16, SHAPE), (torch.float32, (0, 4096))]:
            with self.subTest(dtype=dtype, shape=shape):
                with self.assertRaises(ValueError):
                    spillway.load(path, dtype, shape)
        del t
        os.unlink(path)

    def test_load_refuses_a_missing_file(self):
        with self.assertRaises(FileNotFoundError):
            spillway.load(os.path.join(spill_dir(), "spillway-export-missing"), torch.float32, SHAPE)


if __name__ == "__main__":
    unittest.main()
