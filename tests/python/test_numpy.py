"""test_numpy.py: proves the helper on numpy arrays with the shim preloaded
(SPILLWAY_POLICY=disk, threshold 1 MiB): large arrays and every kind of view
of them (slices, columns, reversed and transposed) are disk-backed;
residency is over 90% after writing and under 5% after release, and the
data is intact after it refaults; export gives a private name and load maps
it again without a copy (writes visible both ways), freeing the mapping
when the last view dies; and each refusal: small arrays, a wrong shape or
dtype (ValueError), a missing file (FileNotFoundError), release by path
while mapped."""

import gc
import os
import stat
import unittest

import numpy

import spillway
from support import MiB, empty_spill_dir, eventually, file_cached_bytes, numpy_pattern, spill_dir

SHAPE = (4096, 4096)  # float32: 64 MiB, a whole number of pages


class NumpyQueries(unittest.TestCase):
    def test_shim_is_active(self):
        self.assertTrue(spillway.is_active())

    def test_large_array_and_its_views_are_disk_backed(self):
        a = numpy.zeros(SHAPE, dtype=numpy.float32)
        for name, view in [("array", a), ("rows", a[100:200]), ("column", a[:, 7]),
                           ("reversed", a[::-1]), ("transposed", a.T),
                           ("flat tail", a.reshape(-1)[12345:])]:
            with self.subTest(view=name):
                self.assertTrue(spillway.is_disk_backed(view))
                self.assertEqual(spillway.backing(view), "disk")

    def test_small_array_is_not(self):
        small = numpy.zeros(1000, dtype=numpy.float32)
        self.assertFalse(spillway.is_disk_backed(small))
        self.assertIsNone(spillway.backing(small))
        self.assertFalse(spillway.release_page_cache(small))
        self.assertIsNone(spillway.export(small))

    def test_empty_array_is_not(self):
        empty = numpy.zeros((0, 5), dtype=numpy.float32)
        self.assertFalse(spillway.is_disk_backed(empty))
        self.assertEqual(spillway.residency(empty), 0)

    def test_other_objects_are_a_type_error(self):
        with self.assertRaises(TypeError):
            spillway.is_disk_backed(b"bytes")


class NumpyPageCache(unittest.TestCase):
    def test_written_released_refaulted(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = numpy_pattern(SHAPE, 1)
        self.assertGreater(spillway.residency(a), 0.9 * a.nbytes)
        self.assertTrue(spillway.release_page_cache(a))
        self.assertLess(spillway.residency(a), 0.05 * a.nbytes)
        self.assertTrue(numpy.array_equal(a, numpy_pattern(SHAPE, 1)))  # refaults intact
        self.assertGreater(spillway.residency(a), 0.9 * a.nbytes)

    def test_release_through_a_view_releases_the_whole_array(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = numpy_pattern(SHAPE, 2)
        self.assertTrue(spillway.release_page_cache(a[1000:1001, 5:9]))
        self.assertLess(spillway.residency(a), 0.05 * a.nbytes)
        self.assertTrue(numpy.array_equal(a, numpy_pattern(SHAPE, 2)))

    def test_residency_of_a_view_counts_its_span_only(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = 1
        rows = a[256:512]  # 4 MiB, page-aligned
        self.assertEqual(spillway.residency(rows), 4 * MiB)
        self.assertEqual(spillway.residency(a), a.nbytes)


class NumpyExportLoad(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def test_export_names_a_private_file(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = numpy_pattern(SHAPE, 3)
        path = spillway.export(a)
        self.assertIsNotNone(path)
        self.assertEqual(os.path.dirname(path), spill_dir())
        self.assertTrue(os.path.basename(path).startswith("spillway-export-"))
        st = os.stat(path)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(st.st_size, a.nbytes)
        self.assertEqual(spillway.export(a[7:9]), path)  # a view: its array's name
        os.unlink(path)

    def test_load_maps_without_a_copy_and_shares_writes(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = numpy_pattern(SHAPE, 4)
        path = spillway.export(a)
        b = spillway.load(path, numpy.float32, SHAPE)
        self.assertEqual(b.shape, SHAPE)
        self.assertEqual(b.dtype, numpy.float32)
        self.assertFalse(b.flags.owndata)
        self.assertNotEqual(b.ctypes.data, a.ctypes.data)
        self.assertEqual(b.ctypes.data % (2 * MiB), 0)  # the start of a mapping, not a copy
        self.assertTrue(spillway.is_disk_backed(b))
        self.assertTrue(numpy.array_equal(a, b))
        b[0, 0] = -1.0
        self.assertEqual(a[0, 0], -1.0)
        a[1, 1] = -2.0
        self.assertEqual(b[1, 1], -2.0)
        del a, b
        os.unlink(path)

    def test_the_mapping_lives_as_long_as_a_view_of_it(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = numpy_pattern(SHAPE, 5)
        path = spillway.export(a)
        del a  # the exporter lets go; the named file stays
        gc.collect()
        b = spillway.load(path, numpy.float32, SHAPE)
        view = b[10:20]
        del b
        gc.collect()
        self.assertTrue(spillway.has_live_mapping(path))
        self.assertTrue(numpy.array_equal(view, numpy_pattern(SHAPE, 5)[10:20]))
        self.assertFalse(spillway.release_page_cache_by_path(path))  # refused: still mapped
        del view
        gc.collect()
        self.assertTrue(eventually(lambda: not spillway.has_live_mapping(path)))
        self.assertTrue(spillway.release_page_cache_by_path(path))
        self.assertLess(file_cached_bytes(path), 0.05 * 64 * MiB)
        os.unlink(path)

    def test_release_by_path_is_refused_while_the_exporter_maps_the_file(self):
        # Regression test for control-shim-bugs.md#1 (fixed in c534073): the
        # exporter's own mapping was not seen, so the release was "requested"
        # and freed nothing.
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = 1
        path = spillway.export(a)
        self.assertTrue(spillway.has_live_mapping(path))
        self.assertFalse(spillway.release_page_cache_by_path(path))
        del a
        os.unlink(path)

    def test_load_an_array_that_is_not_whole_pages(self):
        # Regression test for control-shim-bugs.md#2 (fixed in c534073): the
        # exported file was rounded up to whole pages, so the array's own
        # size was refused as a mismatch.
        shape = (1000, 1001)
        a = numpy.empty(shape, dtype=numpy.float32)
        a[...] = numpy_pattern(shape, 6)
        path = spillway.export(a)
        b = spillway.load(path, numpy.float32, shape)
        self.assertTrue(numpy.array_equal(a, b))
        del a, b
        os.unlink(path)

    def test_load_refuses_a_wrong_shape_or_dtype(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        path = spillway.export(a)
        for dtype, shape in [(numpy.float32, (4096, 4095)), (numpy.float32, (4097, 4096)),
                             (numpy.float64, SHAPE), (numpy.int16, SHAPE), (numpy.float32, (0,))]:
            with self.subTest(dtype=dtype, shape=shape):
                with self.assertRaises(ValueError):
                    spillway.load(path, dtype, shape)
        self.assertEqual(os.stat(path).st_size, a.nbytes)  # never extended
        del a
        os.unlink(path)

    def test_load_refuses_a_missing_file(self):
        missing = os.path.join(spill_dir(), "spillway-export-missing")
        with self.assertRaises(FileNotFoundError):
            spillway.load(missing, numpy.float32, SHAPE)
        self.assertFalse(os.path.exists(missing))

    def test_release_by_path_of_missing_and_unmapped_files(self):
        self.assertFalse(spillway.release_page_cache_by_path(os.path.join(spill_dir(), "none")))
        plain = os.path.join(spill_dir(), "plain")
        with open(plain, "wb") as f:
            f.write(b"\1" * (16 * MiB))
        self.assertFalse(spillway.has_live_mapping(plain))
        self.assertTrue(spillway.release_page_cache_by_path(plain))
        self.assertLess(file_cached_bytes(plain), 0.05 * 16 * MiB)
        os.unlink(plain)


if __name__ == "__main__":
    unittest.main()
