"""test_callsites.py: Python call sites under the shim (threshold 1 MiB):
each large allocation's site carries its innermost Python frames as
"python relpath:qualname:line" in the stats file, so two Python lines that
reach the same native code are two sites; this holds while the GIL is held
(bytearray), on a thread of its own, and when the native operator released
the GIL (torch.empty); the site's identity is the same from another
checkout of the script (relative paths) and in another run; python_depth
bounds the frames and 0 turns them off."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from support import PYTHON

JOB = '''\
import sys, threading
def make_a():
    return bytearray(2 << 20)
def make_b():
    return bytearray(2 << 20)
def deep(n):
    return deep(n - 1) if n else bytearray(2 << 20)
def tensors():
    import torch
    def dataset():
        return torch.empty(1 << 20)
    def scatter():
        return torch.empty(1 << 20)
    return dataset(), scatter()
keep = []
what = sys.argv[1]
if what == "two":
    keep += [make_a(), make_b()]
elif what == "thread":
    t = threading.Thread(target=lambda: keep.append(make_a()))
    t.start(); t.join()
elif what == "deep":
    keep.append(deep(10))
elif what == "torch":
    keep += list(tensors())
'''


class PythonCallSites(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spillway-pysites-test.")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.job = os.path.join(self.tmp, "a", "job.py")
        os.makedirs(os.path.dirname(self.job))
        with open(self.job, "w") as f:
            f.write(JOB)

    def sites(self, what, job=None, config=""):
        """Runs the job under the shim; returns {first python frame: site} of its stats."""
        stats = os.path.join(self.tmp, "stats.jsonl")
        if os.path.exists(stats):
            os.unlink(stats)
        cfg = os.path.join(self.tmp, "job.toml")
        with open(cfg, "w") as f:
            f.write(config)
        env = dict(os.environ, LD_PRELOAD=os.environ["SPILLWAY_TEST_PRELOAD"], SPILLWAY_STATS=stats,
                   SPILLWAY_CONFIG=cfg, SPILLWAY_POLICY="anon")
        job = job or self.job
        subprocess.run([PYTHON, job, what], env=env, check=True, timeout=120, cwd=os.path.dirname(job))
        out = {}
        with open(stats) as f:
            for line in f:
                for s in json.loads(line).get("sites", []):
                    py = [fr for fr in s["frames"] if fr.startswith("python ")]
                    out[py[0] if py else "native"] = dict(s, python=py)
        return out

    def test_two_lines_are_two_sites_while_the_gil_is_held(self):
        sites = self.sites("two")
        a, b = sites.get("python job.py:make_a:3"), sites.get("python job.py:make_b:5")
        self.assertTrue(a and b, sites.keys())
        self.assertNotEqual(a["id"], b["id"])
        self.assertEqual(a["python"][1], "python job.py:<module>:18")
        self.assertFalse(a["frames"][len(a["python"])].startswith("python "))  # then native frames

    def test_identity_is_the_same_in_another_run_and_another_checkout(self):
        first = self.sites("two")
        other = os.path.join(self.tmp, "elsewhere", "deeper", "job.py")
        os.makedirs(os.path.dirname(other))
        shutil.copy(self.job, other)
        again = self.sites("two", job=other)
        for frame in ["python job.py:make_a:3", "python job.py:make_b:5"]:
            self.assertEqual(first[frame]["id"], again[frame]["id"], frame)

    def test_a_thread_of_its_own(self):
        sites = self.sites("thread")
        self.assertIn("python job.py:make_a:3", sites)
        self.assertIn("python job.py:<lambda>:20", sites["python job.py:make_a:3"]["python"])

    def test_torch_operators_release_the_gil_and_are_still_told_apart(self):
        sites = self.sites("torch")
        d = sites.get("python job.py:tensors.<locals>.dataset:11")
        s = sites.get("python job.py:tensors.<locals>.scatter:13")
        self.assertTrue(d and s, sites.keys())
        self.assertNotEqual(d["id"], s["id"])
        self.assertIn("c10::alloc_cpu", " ".join(d["frames"]))

    def test_python_depth_bounds_the_frames_and_zero_turns_them_off(self):
        sites = self.sites("deep", config="[callsites]\npython_depth = 2\n")
        site = sites["python job.py:deep:7"]
        self.assertEqual(site["python"], ["python job.py:deep:7", "python job.py:deep:7"])
        sites = self.sites("two", config="[callsites]\npython_depth = 0\n")
        self.assertEqual(list(sites), ["native"])


if __name__ == "__main__":
    unittest.main()
