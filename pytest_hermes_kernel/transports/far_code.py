"""Python a far-side script defines, for scripts that import nothing of the kit (``python3 -I -c``).

:data:`RMTREE_CODE` was in :mod:`pytest_hermes_kernel.kernel.runner.trees`, beside
:func:`~pytest_hermes_kernel.kernel.runner.trees.remove_tree`, which it mirrors; the runner never
runs it, and filecell's compact runner file (which must stay under half a command line) now
ships ``trees`` for the runner's own shutdown, so the host's scripts' copy lives here.
"""

from __future__ import annotations

__all__ = ["RMTREE_CODE"]

#: Defines ``rmtree(path)`` in a script run by ``python3 -I -c`` on a kernel's host (a script
#: imports nothing of the kit): :func:`~pytest_hermes_kernel.kernel.runner.trees.remove_tree`
#: without its return value.
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
