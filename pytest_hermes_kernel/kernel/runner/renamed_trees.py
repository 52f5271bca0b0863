"""Removing a local kernel dir under another name first, so that no one judges it half removed.

Only the local transport's runners (``rename_kernel_dir``) and the host's own removals use it;
filecell's compact runner file leaves it out (:data:`~pytest_hermes_kernel.transports.runner_zipapp.COMPACT_OMITS`),
which keeps that file under half a command line with :mod:`.trees` in it.
"""

from __future__ import annotations

import os

from .trees import remove_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: Name prefix of a kernel dir while it is removed (:func:`remove_renamed`): no leak probe or sweep
#: takes it for a kernel's dir of that name.
REMOVING_PREFIX = ".removing-"


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

