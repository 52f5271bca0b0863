"""Removing a kernel dir whatever its cells left in it, on the host and on a kernel's host.

A kernel dir is a cell's working dir, so its contents are the cell's: a tree nested deeper than
Python's recursion limit is one ``os.makedirs`` away. ``shutil.rmtree`` before Python 3.12 (and
``os.walk``) recurse once per level, so such a tree made it raise ``RecursionError``, which
``ignore_errors=True`` does not catch: a cell that made 1,500 nested dirs in its cwd made
``shutdown()`` raise it, on every transport. :func:`remove_tree` hands such a tree to ``rm -rf``
(coreutils or busybox: no recursion limit, never follows a symlink). Every removal of a kernel dir
uses it: the host's, the kernel servers', the reap scripts', a runner's own once its host is gone,
the crashed-worker reap and the leak check's.
"""

from __future__ import annotations

import os
import shutil


def remove_tree(path: str) -> bool:
    """Remove ``path`` and everything below it, ignoring errors (as ``shutil.rmtree(path,
    ignore_errors=True)``), also a tree deeper than the recursion limit (then by ``rm -rf``).

    A symlink at ``path`` or below it is removed, never followed.

    :returns: whether ``path`` is gone (``False``: something could not be removed, or ``rm`` was
        needed and this host has none).
    """
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        import subprocess  # only here: the runner's imports stay what its start needs
        try:
            subprocess.run(["rm", "-rf", "--", path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        except OSError:
            pass
    return not os.path.lexists(path)
