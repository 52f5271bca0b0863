"""Regression scenarios: a bug reproduced as data (TOML), run on any transport.

A scenario file (``fixtures/*.toml``)::

    [scenario]
    name = "sys-exit-ends-kernel"
    source = "handed case B07; nteract/papermill#536"
    transports = ["local", "docker", "ssh", "filecell"]   # optional: default every selected one

    [kernel]                       # KernelOptions fields (timeout, max_output_bytes, ...)
    timeout = 10

    [registry]                     # optional: max_kernels, idle_timeout
    max_kernels = 2

    [[fault]]                      # optional: kind = kernel_sigkill | oom | transport_drop, with the
    kind = "kernel_sigkill"        #   keyword arguments of the marker of that kind (after_cell,
    after_cell = 1                 #   during_cell, delay, limit_bytes, mode, duration, latency)

    [[cell]]
    code = "x = 1"                 # the fault above fires once this cell has returned

    [[cell]]
    code = "import sys; sys.exit(3)"
    owner = "a"                    # optional: run under this owner's kernel (default "scenario")
    child = "c1"                   # optional: the owner's delegated child (pinned)
    timeout = 2                    # optional: this cell's budget
    threads = 16                   # optional: run as N concurrent first cells
    interrupt_after = 1.0          # optional: interrupt the cell after this many seconds
    action = "cell"                # or restart | shutdown_child | shutdown_owner | reap
    expect = { status = "exited", exit_code = 3 }

    [expect_end]                   # optional: after the last step
    kernels = 1                    # registry entries alive
    processes = 1                  # kernels it started that still have a live process (any transport)

Expectation keys for cells: ``status``, ``value``, ``ename``, ``stdout``, ``stdout_contains``,
``stderr_contains``, ``text_contains`` (stdout+stderr+evalue), ``note_contains`` (``kernel.note``:
what the kit says of the kernel, an OOM-killed subprocess say), ``state_lost``, ``reason``,
``watchdog``, ``exit_code``, ``signal``, ``oom_killed``, ``stdout_truncated``,
``max_duration_s`` (wall seconds for the step), ``same_pid = true`` (all threads got one kernel),
``generation``, ``reconnected``. Each is checked when the file is read: a value of the wrong
type, or a status, reason or watchdog outcome the kit does not have, is a collection error.

The runner decides *when* a fault fires (after or during which step: a ``during`` fault
``delay`` seconds after the step's cell started in the worker, the kernel's ``running`` event,
and not at all when the step ends first); what firing does is the caller's ``on_fault`` (the plugin passes the fault layer's one injector, and applies the
faults' transport and kernel options before the run, as for markers).

``format`` reads and checks a scenario file (:func:`load_scenario`); ``runner`` runs one
(:class:`ScenarioRunner`). May import: kernel, transports, errors (rank 4, beside faults and
leaks); never the plugin.
"""

from __future__ import annotations

from .format import Scenario, load_scenario
from .runner import FaultInjector, ScenarioFault, ScenarioRunner, check

__all__ = ["FaultInjector", "Scenario", "ScenarioFault", "ScenarioRunner", "check", "load_scenario"]
