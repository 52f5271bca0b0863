"""What a docker or ssh re-attach checks before it opens its relay: that the runner's socket is there.

A kernel whose cell removed its own kernel dir (its default working dir: ``shutil.rmtree(os.getcwd())``)
keeps running, but its unix socket went with the dir, and no relay can reach it again. A re-attach
after a dropped stream then tried for the whole ``reconnect_timeout`` (10 s) and reported only the
drop. One look at the socket path (one exec more, after the probe that finds the runner alive) makes that loss final
at once and names the socket (``tests/regressions/test_a_reattach_to_a_kernel_whose_dir_was_removed_says_so.py``).
"""

from __future__ import annotations

from ..errors import TransportLostError

__all__ = ["LISTENING_SCRIPT", "NOT_LISTENING", "check_listening"]

#: Exit status of :data:`LISTENING_SCRIPT` when the path is no socket (its stdout says why).
NOT_LISTENING = 3
#: argv[1]: a kernel's socket path. Exit 0 when it is a socket; else :data:`NOT_LISTENING`, the
#: reason on stdout (``No such file or directory``, ``not a socket``).
LISTENING_SCRIPT = r"""
import os, stat, sys
try:
    ok = stat.S_ISSOCK(os.lstat(sys.argv[1]).st_mode)
except OSError as exc:
    sys.stdout.write(exc.strerror or str(exc))
    sys.exit(3)
if not ok:
    sys.stdout.write('not a socket')
    sys.exit(3)
"""


def check_listening(code: int | None, out: bytes, socket_path: str, where: str) -> None:
    """Raise the final loss when :data:`LISTENING_SCRIPT` exited :data:`NOT_LISTENING`; any other
    outcome (0, or a probe that could not tell) lets the re-attach go on.

    :param where: the runner as the message names it (``pid 24 in c4cbb33898a1``).
    :raises TransportLostError: (``permanent``) naming the socket and why.
    """
    if code == NOT_LISTENING:
        why = out.decode("utf-8", "replace").strip() or "not there"
        raise TransportLostError(f"the kernel runner ({where}) runs, but its socket {socket_path} is gone ({why}): "
                                 "no relay can reach it again (did a cell remove its kernel dir?)", permanent=True)
