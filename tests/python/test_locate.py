"""test_locate.py: spillway/_locate.py, the helper's search for the library
and the tool. $SPILLWAY_LIBRARY wins, and a wrong one is an error, never a
silent fall-through; a package with _lib and _bin (a wheel) finds its own
copies; one with _install_paths.py (the Debian package, meson install)
finds the directories it names; the source tree (neither) finds nothing.
The console script runs the tool it finds, and says in one line when there
is none. Runs on copies of the package in a scratch directory."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import spillway
from spillway import _locate

SOURCE_PACKAGE = os.path.dirname(spillway.__file__)


def copy_package(root):
    dest = os.path.join(root, "spillway")
    shutil.copytree(SOURCE_PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.in"))
    return dest


def python_in(root, code, env=None):
    """Runs code with only the copy at root on the path, and no
    SPILLWAY_LIBRARY unless env sets it."""
    full_env = {k: v for k, v in os.environ.items() if k != "SPILLWAY_LIBRARY"}
    full_env.update(PYTHONPATH=root, **(env or {}))
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True)


class Locate(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="spillway-locate-")
        self.package = copy_package(self.root)

    def tearDown(self):
        shutil.rmtree(self.root)

    def paths(self, env=None):
        r = python_in(self.root, "import spillway._locate as l; print(l.library_path()); print(l.tool_path())", env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split("\n")[:2]

    def test_source_tree_finds_nothing(self):
        self.assertEqual(self.paths(), ["None", "None"])

    def test_wheel_layout_finds_its_own_copies(self):
        os.makedirs(os.path.join(self.package, "_lib"))
        os.makedirs(os.path.join(self.package, "_bin"))
        lib = os.path.join(self.package, "_lib", "libspillway.so.0")
        tool = os.path.join(self.package, "_bin", "spillway")
        open(lib, "w").close()
        with open(tool, "w") as f:
            f.write("#!/bin/sh\necho tool ran \"$@\"\n")
        os.chmod(tool, 0o755)
        self.assertEqual(self.paths(), [lib, tool])
        # The console script execs the bundled tool with the arguments.
        r = python_in(self.root, "import sys; from spillway._cli import main; sys.argv = ['spillway', 'run', '--', 'x']; main()")
        self.assertEqual(r.stdout, "tool ran run -- x\n", r.stderr)

    def test_installed_layout_finds_the_recorded_directories(self):
        libdir = os.path.join(self.root, "lib")
        bindir = os.path.join(self.root, "bin")
        os.makedirs(libdir)
        os.makedirs(bindir)
        open(os.path.join(libdir, "libspillway.so.0"), "w").close()
        open(os.path.join(libdir, "libspillway.so"), "w").close()
        tool = os.path.join(bindir, "spillway")
        open(tool, "w").close()
        os.chmod(tool, 0o755)
        with open(os.path.join(self.package, "_install_paths.py"), "w") as f:
            f.write('LIBDIR = "%s"\nBINDIR = "%s"\n' % (libdir, bindir))
        # The development name first.
        self.assertEqual(self.paths(), [os.path.join(libdir, "libspillway.so"), tool])

    def test_explicit_library_wins_and_a_wrong_one_is_an_error(self):
        lib = os.path.join(self.root, "elsewhere.so")
        open(lib, "w").close()
        self.assertEqual(self.paths({"SPILLWAY_LIBRARY": lib})[0], lib)
        r = python_in(self.root, "import spillway; spillway.library_path()",
                      {"SPILLWAY_LIBRARY": os.path.join(self.root, "missing.so")})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("FileNotFoundError: SPILLWAY_LIBRARY=", r.stderr)
        self.assertIn("is not a file; point it at libspillway.so or unset it", r.stderr)

    def test_console_script_without_a_tool_is_one_line(self):
        r = python_in(self.root, "import sys; from spillway._cli import main; sys.exit(main(['run', '--', 'true']))")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("reinstall the spillway wheel", r.stderr)

    def test_library_path_is_public(self):
        self.assertIn("library_path", spillway.__all__)
        self.assertIs(spillway.library_path, _locate.library_path)


if __name__ == "__main__":
    unittest.main()
