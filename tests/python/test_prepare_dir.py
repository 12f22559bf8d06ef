"""test_prepare_dir.py: proves prepare_spill_dir() through the helper, with
the shim preloaded: in a fresh run (no marker) it removes only spillway's
stale exports (spillway-export-* of processes no longer running), keeps
every other file, and marks the run prepared in os.environ as well as in
the C environment; a second call, and a child started with a copy of
os.environ, leave new files alone; and the first export() of a process that
no ancestor prepared does the clearing and mirrors the marker too."""

import os
import unittest

import spillway
from support import empty_spill_dir, run_python, spill_dir

MARKER = "SPILLWAY_PREPARED"


def plant(name):
    with open(os.path.join(spill_dir(), name), "wb") as f:
        f.write(b"stale")


def present(name):
    return os.path.lexists(os.path.join(spill_dir(), name))


def fresh_env():
    env = os.environ.copy()
    env.pop(MARKER, None)
    return env


class PrepareSpillDir(unittest.TestCase):
    def setUp(self):
        empty_spill_dir()
        # 2147483647 is above any pid_max: that exporter cannot be running.
        for name in ("spillway-export-2147483647-stale", "spillway-export-old", "keep.txt",
                     "my-spillway-export-1", self.live_export()):
            plant(name)

    @staticmethod
    def live_export():
        return "spillway-export-%d-live" % os.getpid()  # its exporter (this test) is running

    def test_a_fresh_run_removes_only_stale_exports_and_marks_itself(self):
        code = ("import os, spillway; spillway.prepare_spill_dir(); "
                "print(os.environ.get('SPILLWAY_PREPARED') == str(os.getpid()))")
        status, out, err = run_python(code, env=fresh_env())
        self.assertEqual(status, 0, err)
        self.assertEqual(out.strip(), "True")
        self.assertFalse(present("spillway-export-2147483647-stale"))
        self.assertFalse(present("spillway-export-old"))
        self.assertTrue(present("keep.txt"))
        self.assertTrue(present("my-spillway-export-1"))
        self.assertTrue(present(self.live_export()))

    def test_once_per_run_in_this_process_and_its_children(self):
        code = "\n".join([
            "import os, subprocess, sys, spillway",
            "spillway.prepare_spill_dir()",
            "open(os.path.join(os.environ['SPILLWAY_DIR'], 'spillway-export-new'), 'wb').close()",
            "spillway.prepare_spill_dir()",
            "child = 'import spillway; spillway.prepare_spill_dir()'",
            "subprocess.run([sys.executable, '-c', child], env=os.environ.copy(), check=True)",
        ])
        status, out, err = run_python(code, env=fresh_env())
        self.assertEqual(status, 0, err)
        self.assertFalse(present("spillway-export-old"))
        self.assertTrue(present("spillway-export-new"))

    def test_the_first_export_prepares_and_mirrors_the_marker(self):
        code = "\n".join([
            "import os, numpy, spillway",
            "a = numpy.ones((1024, 1024), numpy.float32)",
            "path = spillway.export(a)",
            "print(os.environ.get('SPILLWAY_PREPARED') == str(os.getpid()), os.path.exists(path))",
        ])
        status, out, err = run_python(code, env=fresh_env())
        self.assertEqual(status, 0, err)
        self.assertEqual(out.split(), ["True", "True"])
        self.assertFalse(present("spillway-export-old"))
        self.assertTrue(present("keep.txt"))

    def test_under_an_ancestors_marker_nothing_is_removed(self):
        env = fresh_env()
        env[MARKER] = "1"
        status, out, err = run_python("import spillway; spillway.prepare_spill_dir()", env=env)
        self.assertEqual(status, 0, err)
        self.assertTrue(present("spillway-export-old"))


if __name__ == "__main__":
    unittest.main()
