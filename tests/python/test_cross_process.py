"""test_cross_process.py: proves a tensor or array exported in one Python
process is loaded in another (a second /usr/bin/python3, the shim preloaded
in both) by its path alone: the second process sees the first one's values,
its writes are visible to the first, and the first one's later writes to
it; no copy is made on either side (one page cache). Also that the
prepared-marker reaches the second process."""

import os
import subprocess
import unittest

import numpy
import torch

import spillway
from support import PYTHON, empty_spill_dir, numpy_pattern, torch_pattern

SHAPE = (2048, 4096)  # float32: 32 MiB

# The second process: loads the file, checks the first process's values,
# writes row 0, then waits for a line and checks row 1 (written meanwhile).
PEER = r"""
import sys, numpy, torch, spillway
from support import numpy_pattern
path, kind = sys.argv[1], sys.argv[2]
shape = (2048, 4096)
if kind == "torch":
    x = spillway.load(path, torch.float32, shape)
    expected = torch.from_numpy(numpy_pattern(shape, 1))
    same = lambda a, b: bool(torch.equal(a, b))
else:
    x = spillway.load(path, numpy.float32, shape)
    expected = numpy_pattern(shape, 1)
    same = lambda a, b: bool(numpy.array_equal(a, b))
print("loaded", spillway.is_disk_backed(x), same(x, expected), flush=True)
x[0] = 7.0
print("wrote", flush=True)
sys.stdin.readline()
print("row1", bool((x[1] == 9.0).all()), flush=True)
"""


def start_peer(path, kind):
    return subprocess.Popen([PYTHON, "-c", PEER, path, kind], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


class CrossProcess(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()

    def share_with_peer(self, x, kind, row_is):
        path = spillway.export(x)
        self.assertIsNotNone(path)
        peer = start_peer(path, kind)
        try:
            self.assertEqual(peer.stdout.readline().split(), ["loaded", "True", "True"])
            self.assertEqual(peer.stdout.readline().strip(), "wrote")
            self.assertTrue(row_is(x[0], 7.0))  # the peer's write, seen here
            x[1] = 9.0  # our write, after the peer mapped
            peer.stdin.write("go\n")
            peer.stdin.flush()
            self.assertEqual(peer.stdout.readline().split(), ["row1", "True"])
        finally:
            peer.stdin.close()
            self.assertEqual(peer.wait(), 0)
        os.unlink(path)

    def test_numpy_array(self):
        a = numpy.empty(SHAPE, dtype=numpy.float32)
        a[...] = numpy_pattern(SHAPE, 1)
        self.share_with_peer(a, "numpy", lambda row, v: bool((row == v).all()))

    def test_torch_tensor(self):
        t = torch_pattern(SHAPE, 1)
        self.share_with_peer(t, "torch", lambda row, v: bool((row == v).all()))

    def test_prepared_marker_reaches_a_child(self):
        spillway.prepare_spill_dir()
        marker = os.environ.get("SPILLWAY_PREPARED")
        self.assertEqual(marker, str(os.getpid()))
        out = subprocess.run([PYTHON, "-c", "import os; print(os.environ.get('SPILLWAY_PREPARED'))"],
                             env=os.environ.copy(), capture_output=True, text=True).stdout.strip()
        self.assertEqual(out, marker)


if __name__ == "__main__":
    unittest.main()
