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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: Name prefix of a kernel dir while it is removed (:func:`remove_renamed`): no leak probe or sweep
#: takes it for a kernel's dir of that name.
REMOVING_PREFIX = ".removing-"


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


def remove_renamed(path: str, remove: Callable[[str], bool] = remove_tree) -> bool:
    """Remove ``path`` as :func:`remove_tree` does, renamed to ``.removing-<name>`` beside it first,
    so that no one sees it half removed under its own name (its host file gone: a leak probe then
    judged it by its name alone, and a namespaced neighbour of the same pid took it for its own);
    renamed back where it could not all go, so that what is left is seen, and reported, as itself.
    A ``.removing-<name>`` left by a remover killed midway (no ``path``) is removed in its place.

    :param remove: what removes the renamed tree (:func:`remove_tree`).
    :returns: whether it is gone.
    """
    going = os.path.join(os.path.dirname(path), REMOVING_PREFIX + os.path.basename(path))
    try:
        os.rename(path, going)
    except OSError:  # gone already, or a dir this process may not rename in: removed where it is
        if os.path.lexists(path) or os.path.islink(going) or not os.path.isdir(going):
            return remove(path)
        # (else left half removed under ``going`` by a remover killed midway, as a runner the host's
        # shutdown killed as it removed a big kernel dir: taken over, so that it is gone or seen)
    gone = False
    try:
        gone = remove(going)
    finally:  # (a Ctrl-C midway too: left under ``going``, no leak check saw it)
        if not gone:
            try:
                os.rename(going, path)
            except OSError:
                pass
    return gone


#: Defines ``rmtree(path)`` in a script run by ``python3 -I -c`` on a kernel's host (a script
#: imports nothing of the kit): :func:`remove_tree` without its return value.
RMTREE_CODE = r"""
def rmtree(path):
    import shutil
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        import subprocess
        try:
            subprocess.call(['rm', '-rf', '--', path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        except OSError:
            pass
"""
