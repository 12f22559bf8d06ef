"""Where this installation keeps libspillway.so and the ``spillway`` tool, so
that neither the console script nor ``spillway.library_path()`` needs a path
from the user.

Invariant: the order is fixed. ``$SPILLWAY_LIBRARY`` first (an explicit
choice: a wrong one is an error, never a silent fall-through, as in the
tool); then the copy inside this package (a wheel: ``spillway/_lib`` and
``spillway/_bin``); then the directories this helper was installed with (the
Debian package, ``meson install``: ``_install_paths.py``, written at build
time; a wheel has none). Never a build tree.
"""

import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The development name first, then the soname (a wheel holds only the file
# the soname names: a zip has no symlinks).
_LIBRARY_NAMES = ("libspillway.so", "libspillway.so.0")


def _install_paths():
    try:
        from . import _install_paths
    except ImportError:  # a wheel, or the source tree
        return None
    return _install_paths


def _library_in(directory):
    for name in _LIBRARY_NAMES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


def library_path():
    """The absolute path of libspillway.so to put in ``LD_PRELOAD``, e.g. for
    a subprocess started without ``spillway run``; None when this
    installation has none. Raises FileNotFoundError when
    ``$SPILLWAY_LIBRARY`` names no file."""
    explicit = os.environ.get("SPILLWAY_LIBRARY")
    if explicit:
        if not os.path.isfile(explicit):
            raise FileNotFoundError(
                "SPILLWAY_LIBRARY=%s is not a file; point it at libspillway.so or unset it" % explicit
            )
        return os.path.abspath(explicit)
    bundled = _library_in(os.path.join(PACKAGE_DIR, "_lib"))
    if bundled:
        return bundled
    paths = _install_paths()
    return _library_in(paths.LIBDIR) if paths else None


def tool_path():
    """The ``spillway`` executable of this installation, or None."""
    bundled = os.path.join(PACKAGE_DIR, "_bin", "spillway")
    if os.access(bundled, os.X_OK):
        return bundled
    paths = _install_paths()
    if paths:
        installed = os.path.join(paths.BINDIR, "spillway")
        if os.access(installed, os.X_OK):
            return installed
    return None
