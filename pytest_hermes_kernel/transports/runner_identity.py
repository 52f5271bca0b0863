"""Whether a pid where a docker or ssh kernel ran is still that kernel's runner: its ``HERMES_KERNEL_ID``.

A runner's pid outlives it in the transport's records. Pids are reused: after a reboot of an ssh
host, after a restart of a container (they start over), and within one running container or host
once they wrap (``pid_max`` is 32768 on many hosts, and a shared container forks for every cell
and probe). A probe or kill by the pid alone then takes another program for the runner: a cell
waited its ``reconnect_timeout`` for a re-attach to it and said "runner still alive; killed", and
the kill SIGKILLed that program's session. Every runner carries ``HERMES_KERNEL_ID=<its id>`` in
``/proc/PID/environ`` (in its launch environment when spawned, stamped by its kernel server when
forked), and its kernel dir is named by that id: the scripts here are told the id and read the
environ, so they run as the kernel's user (docker's root lacks ``CAP_SYS_PTRACE`` and cannot read it).

Imports only :mod:`.detached` (the script pieces); used by the docker and ssh transports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .detached import ALIVE_SCRIPT, LIVE_ENV_CODE, STAT_FIELDS_CODE

if TYPE_CHECKING:
    from ..kernel.contract import Launched

#: argv[1]: a runner's pid, argv[2]: its kernel id. Exit status 0 while it runs (not a zombie)
#: and carries the kernel's id (its pid may be another kernel's, or anyone's, by now), else 1,
#: after a SIGKILL to what is left of its session (unless a live leader of it without the id makes
#: it another's): a runner killed from outside (kill -9, the OOM killer) left its worker running
#: the cell, reparented, with no one to end it (no kill is sent to a runner seen gone). As
#: :data:`~.detached.ALIVE_SCRIPT`, in the same exec: the probe that finds the runner gone (a
#: re-attach's, the next cell's) ends its worker.
ALIVE_OR_END_SCRIPT = "import os, signal, sys\n" + STAT_FIELDS_CODE + LIVE_ENV_CODE + r"""
def ours(pid):
    return ('HERMES_KERNEL_ID=' + sys.argv[2]).encode() in (live_env(pid) or ())
sid, lead = sys.argv[1].encode(), stat_fields(sys.argv[1])
if lead is not None and lead[0] != b'Z' and ours(sys.argv[1]):
    sys.exit(0)
if lead is None or lead[0] == b'Z' or lead[3] != sid:  # else a live leader of another's session
    for name in os.listdir('/proc'):
        fields = stat_fields(name) if name.isdigit() else None
        if fields is not None and fields[3] == sid and fields[0] != b'Z':
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
sys.exit(1)
"""


def kernel_id_of(launched: Launched) -> str:
    """The kernel id of ``launched`` (its kernel dir is named by it; ``""`` without one)."""
    return (launched.kernel_dir or "").rsplit("/", 1)[-1]


def kernel_arg(launched: Launched) -> list[str]:
    """:data:`~.detached.KILL_SESSION_SCRIPT`'s ``--kernel ID`` (a reused pid's session is left
    alone), if the id is known."""
    kernel_id = kernel_id_of(launched)
    return ["--kernel", kernel_id] if kernel_id else []


def alive_probe(launched: Launched) -> tuple[str, ...]:
    """The script and arguments that tell whether ``launched``'s runner runs: :data:`ALIVE_OR_END_SCRIPT`
    when its kernel id is known, else the plain ``ALIVE_SCRIPT``."""
    kernel_id = kernel_id_of(launched)
    return (ALIVE_OR_END_SCRIPT, str(launched.pid), kernel_id) if kernel_id else (ALIVE_SCRIPT, str(launched.pid))


__all__ = ["ALIVE_OR_END_SCRIPT", "alive_probe", "kernel_arg", "kernel_id_of"]
