"""test_spill.py: proves spill() moves a tensor's or an array's allocation
to a spill file in place, with the shim preloaded and SPILLWAY_POLICY=anon
(so large buffers start as anonymous memory): same address, same values,
every view keeps working, and the bytes are now page cache that
release_page_cache() can give back; spilling through a view moves the whole
allocation; a buffer the shim did not allocate is refused (False); and
export() of an anonymous buffer moves it to a file of its own first."""

import os
import unittest

import numpy
import torch

import spillway
from support import MiB, empty_spill_dir, numpy_pattern, torch_pattern

SHAPE = (4096, 4096)


class SpillNumpy(unittest.TestCase):
    def test_anonymous_array_moves_to_disk_in_place(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = numpy_pattern(SHAPE, 1)
        view = a[100:200, 50:]
        self.assertEqual(spillway.backing(a), "anon")
        address = a.ctypes.data
        self.assertTrue(spillway.spill(view))  # through a view: the whole array
        self.assertEqual(spillway.backing(a), "disk")
        self.assertEqual(a.ctypes.data, address)
        self.assertTrue(numpy.array_equal(a, numpy_pattern(SHAPE, 1)))
        self.assertTrue(numpy.array_equal(view, numpy_pattern(SHAPE, 1)[100:200, 50:]))
        self.assertTrue(spillway.release_page_cache(a))
        self.assertLess(spillway.residency(a), 0.05 * a.nbytes)
        self.assertTrue(numpy.array_equal(a, numpy_pattern(SHAPE, 1)))

    def test_spilling_twice_is_harmless(self):
        a = numpy.ones(SHAPE, dtype=numpy.float32)
        self.assertTrue(spillway.spill(a))
        self.assertTrue(spillway.spill(a))
        self.assertEqual(float(a.sum()), float(a.size))

    def test_memory_the_shim_did_not_allocate_is_refused(self):
        small = numpy.ones(1000, dtype=numpy.float32)
        self.assertFalse(spillway.spill(small))
        self.assertIsNone(spillway.backing(small))


class SpillTorch(unittest.TestCase):
    def test_anonymous_tensor_moves_to_disk_in_place(self):
        t = torch_pattern(SHAPE, 2)
        self.assertEqual(spillway.backing(t), "anon")
        address = t.data_ptr()
        column = t[:, 9]
        self.assertTrue(spillway.spill(column))
        self.assertEqual(spillway.backing(t), "disk")
        self.assertEqual(t.data_ptr(), address)
        self.assertTrue(torch.equal(t, torch_pattern(SHAPE, 2)))
        self.assertTrue(torch.equal(column, torch_pattern(SHAPE, 2)[:, 9]))
        t.add_(1)  # still writable
        self.assertTrue(torch.equal(t, torch_pattern(SHAPE, 2) + 1))

    def test_a_tensor_sharing_numpy_memory_spills_through_its_owner(self):
        a = numpy.ones(SHAPE, dtype=numpy.float32)
        t = torch.from_numpy(a)[10:]  # a view whose storage is numpy's allocation
        self.assertTrue(spillway.spill(a))
        self.assertTrue(spillway.is_disk_backed(t))
        self.assertEqual(float(t.sum()), float(t.numel()))


class ExportAnonymous(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_export_moves_an_anonymous_tensor_to_its_own_file(self):
        t = torch_pattern(SHAPE, 3)
        self.assertEqual(spillway.backing(t), "anon")
        path = spillway.export(t)
        self.assertIsNotNone(path)
        self.assertEqual(spillway.backing(t), "disk")
        self.assertEqual(os.stat(path).st_size, 64 * MiB)
        u = spillway.load(path, torch.float32, SHAPE)
        self.assertTrue(torch.equal(u, torch_pattern(SHAPE, 3)))
        del t, u
        os.unlink(path)


if __name__ == "__main__":
    unittest.main()
