"""Seen: ``WatchdogPolicy`` checked none of its fields (docs/api.md said so): a runaway cell that
ignores SIGINT under ``interrupt_grace=nan`` or ``kill_grace=nan`` hung ``execute()`` forever past
its 0.5 s budget, ``interrupt_grace="2"`` raised a bare ``TypeError`` from the watchdog at the
first timeout (the kernel had started fine), and ``restart="no"`` restarted (a true string).

Now each is a :class:`ConfigError` naming the field, when the policy (or the kernel option
holding it, from a dict) is made.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError, WatchdogPolicy, start_kernel
from pytest_hermes_kernel.kernel.options import KernelOptions


@pytest.mark.parametrize("field, value", [("interrupt_grace", float("nan")), ("kill_grace", float("nan")),
                                          ("interrupt_grace", -1), ("kill_grace", float("inf")),
                                          ("interrupt_grace", "2"), ("kill_grace", True), ("kill_grace", 1e10),
                                          ("restart", "no"), ("restart", 0)])
def test_a_field_of_the_wrong_kind_is_a_config_error_naming_it(field, value):
    with pytest.raises(ConfigError, match=f"watchdog {field} must be"):
        WatchdogPolicy(**{field: value})
    with pytest.raises(ConfigError, match=f"watchdog {field} must be"):
        KernelOptions(watchdog={field: value})


def test_the_policy_as_meant_still_runs_the_ladder():
    with start_kernel("local", timeout=0.5, watchdog={"interrupt_grace": 0.2, "kill_grace": 1, "restart": False}) as k:
        r = k.execute("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass")
    assert (r.status, r.watchdog) == ("timeout", "reset_failed")
