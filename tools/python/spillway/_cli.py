"""The ``spillway`` console script (and ``python -m spillway``): runs the
tool of this installation, which preloads the library installed with it, so
``spillway run -- python train.py`` works in a venv with no path given.

Invariant: the tool replaces this process (exec), so signals, the exit
status and the job's parentage are exactly the tool's own; a missing tool
is one line saying what to reinstall.
"""

import os
import sys

from . import _locate


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    tool = _locate.tool_path()
    if tool is None:
        sys.stderr.write(
            "spillway: no spillway tool in %s/_bin: reinstall the spillway wheel "
            "(pip install --force-reinstall spillway)\n" % _locate.PACKAGE_DIR
        )
        return 1
    try:
        os.execv(tool, ["spillway"] + args)
    except OSError as e:
        sys.stderr.write("spillway: cannot run %s (%s): reinstall the spillway wheel\n" % (tool, e.strerror))
        return 1
