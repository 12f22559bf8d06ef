"""test_not_preloaded.py: proves every function of the helper is a harmless
no-op when the shim is not there (this test runs with LD_PRELOAD empty):
is_active() is False, queries answer False/None, actions change nothing and
return False/None, load() returns None without touching the file, and
prepare_spill_dir() removes nothing and sets no marker; for torch tensors
and numpy arrays alike. Also when the shim is loaded but not routing (its
address-space reservation refused under an RLIMIT_AS), in a child process."""

import os
import unittest

import numpy
import torch

import spillway
from support import MiB, empty_spill_dir, run_python, shim_in_process, spill_dir

SHAPE = (2048, 4096)


class WithoutTheShim(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shim_in_process():
            raise RuntimeError("test_not_preloaded.py must run without libspillway: unset LD_PRELOAD")
        empty_spill_dir()
        cls.path = os.path.join(spill_dir(), "spillway-export-someone-elses")
        with open(cls.path, "wb") as f:
            f.write(b"\0" * (32 * MiB))

    def check_noops(self, x):
        self.assertFalse(spillway.is_disk_backed(x))
        self.assertIsNone(spillway.backing(x))
        self.assertIsNone(spillway.residency(x))
        self.assertFalse(spillway.release_page_cache(x))
        self.assertFalse(spillway.spill(x))
        self.assertIsNone(spillway.export(x))

    def test_is_active_is_false(self):
        self.assertFalse(spillway.is_active())

    def test_numpy_array_and_views(self):
        a = numpy.ones(SHAPE, dtype=numpy.float32)
        for x in (a, a[3:], a.T, a[::-1]):
            self.check_noops(x)
        self.assertEqual(float(a.sum()), float(a.size))  # untouched

    def test_torch_tensor_and_views(self):
        t = torch.ones(SHAPE)
        for x in (t, t[3:], t.t(), t[:, 5]):
            self.check_noops(x)
        self.assertEqual(float(t.sum()), float(t.numel()))

    def test_path_functions(self):
        self.assertFalse(spillway.has_live_mapping(self.path))
        self.assertFalse(spillway.release_page_cache_by_path(self.path))

    def test_load_returns_none(self):
        self.assertIsNone(spillway.load(self.path, numpy.float32, SHAPE))
        self.assertIsNone(spillway.load(self.path, torch.float32, SHAPE))
        self.assertIsNone(spillway.load(self.path, torch.float32, (1, 2)))  # no size check either

    def test_prepare_spill_dir_changes_nothing(self):
        self.assertIsNone(spillway.prepare_spill_dir())
        self.assertTrue(os.path.exists(self.path))
        self.assertNotIn("SPILLWAY_PREPARED", os.environ)


class ShimLoadedButNotRouting(unittest.TestCase):
    def test_every_function_is_a_noop(self):
        # No SPILLWAY_* settings, so the shim's engine starts at the first
        # spillway call, not at start-up (engine_loader.h); by then the
        # address space left (20 MiB over what the process maps) holds the
        # engine's libraries but not the arena's first step (32 MiB), so the
        # shim is loaded but not routing. (A limit set before exec would
        # have to fit python and numpy but not the arena beside them: with
        # a 32 MiB first step no such limit is reliable.)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPILLWAY_")}
        env["LD_PRELOAD"] = os.environ["SPILLWAY_TEST_PRELOAD"]
        code = "\n".join([
            "import numpy, resource, spillway",
            "a = numpy.ones((2048, 4096), numpy.float32)",
            "vm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmSize')) << 10",
            "resource.setrlimit(resource.RLIMIT_AS, (vm + (20 << 20), vm + (20 << 20)))",
            "print(spillway.is_active(), spillway.is_disk_backed(a), spillway.backing(a),",
            "      spillway.residency(a), spillway.release_page_cache(a), spillway.spill(a),",
            "      spillway.export(a), spillway.load('/etc/hostname', numpy.uint8, (1,)))",
        ])

        status, out, err = run_python(code, env=env)
        self.assertEqual(status, 0, err)
        self.assertIn("NOT routing", err)  # the shim was there and said so
        self.assertEqual(out.split(), ["False", "False", "None", "None", "False", "False", "None", "None"])


if __name__ == "__main__":
    unittest.main()
