"""The kernel's environment, applied to the worker only, after everything about its start is fixed.

The runner itself starts with a fixed launch environment that the transport chooses (the far
side's own ``PATH``/``HOME`` etc., and ``HERMES_KERNEL_ID``); no name a user passes can change
which interpreter runs, where it looks for modules or what a shell does on the way. The kernel's
environment travels in the runner config (JSON: any name the OS can hold) and a freshly forked
worker applies it to ``os.environ`` before its first cell, so cells and every process they start
see exactly those values.

Config keys (all optional):

* ``env``: name -> value to set.
* ``env_clear``: start from an empty environment (local: ``env`` is the whole environment).
* ``env_unset``: names to remove first (host variables the kernel must not see).

What an interpreter reads at its own start cannot apply to a worker that is forked, not started:
``PYTHONPATH`` is honoured by putting its entries on ``sys.path`` as an interpreter start would;
``PYTHONHASHSEED``, ``PYTHONHOME``, ``PYTHONWARNINGS``, ``LD_PRELOAD`` and the like apply to the
processes cells start, not to the kernel's own interpreter.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Set in every kernel process whatever ``env`` says: the leak probes and the failed-launch kill
#: find a kernel's processes by it (``/proc/<pid>/environ``), so it is not a user value.
KERNEL_ID_NAME = "HERMES_KERNEL_ID"
#: ``HERMES_KERNEL_ID`` of a kernel server (:mod:`.server`): a 64-character slot each kernel it
#: forks writes its own id over; probes tell a server from a kernel by this prefix.
SERVER_KERNEL_ID_PREFIX = "hermes-kernel-server"
SERVER_KERNEL_ID = SERVER_KERNEL_ID_PREFIX.ljust(64, ".")


def apply_kernel_env(config: dict[str, Any]) -> None:
    """Make ``os.environ`` the kernel's environment (see module docstring).

    :param config: the runner config (``env``, ``env_clear``, ``env_unset``, ``kernel_id``).
    """
    if config.get("env_clear"):
        os.environ.clear()
    for name in config.get("env_unset") or ():
        os.environ.pop(name, None)
    os.environ.update(config.get("env") or {})
    if config.get("kernel_id"):
        os.environ[KERNEL_ID_NAME] = str(config["kernel_id"])
    _extend_sys_path(os.environ.get("PYTHONPATH", ""))
    if not sys.executable:  # started by name with no PATH (a backend whose commands get no environment)
        sys.executable = os.path.realpath("/proc/self/exe")  # cells start sys.executable


def _extend_sys_path(pythonpath: str) -> None:
    """Put ``PYTHONPATH``'s entries after ``sys.path[0]`` (where an interpreter start puts them)."""
    entries = [p for p in pythonpath.split(os.pathsep) if p and p not in sys.path]
    sys.path[1:1] = entries
