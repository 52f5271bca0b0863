"""Leak probes and the checker that compares snapshots taken around a test.

Owns: :mod:`.probes` (snapshots of one kind of resource each: this machine's kernel processes,
children, threads, fds, kernel dirs, registry entries, and what live transports show where their
kernels run) and :mod:`.checker` (before/after diff with a short retry, report, cleanup).

May import: the kernel core (``live_registries``), ``transports`` (``live_transports`` and the
local kernel dir root), ``errors``, ``procs`` and psutil; never pytest (the plugin's
``leakcheck`` drives it) and never ``faults``.
"""

from .checker import LeakChecker, LeakReport
from .probes import PROBES, Probe, register_probe

__all__ = ["LeakChecker", "LeakReport", "PROBES", "Probe", "register_probe"]
