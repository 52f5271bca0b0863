"""Seen: ``start_kernel("local", start_timeout=1e10)`` raised a bare ``OverflowError: timestamp out
of range for platform time_t`` from deep inside the channel's wait (ssh: from ``threading``), and
``shutdown_grace=1e10`` ran the kernel's cells, then raised it from the shutdown: the option is a
finite number, but no lock, event or ``select`` waits longer than ``threading.TIMEOUT_MAX``
(about 9.2e9 s).

Now a duration over :data:`MAX_SECONDS` (1e9 s, about 31 years) is a :class:`ConfigError` naming
the option, before anything starts, and every duration up to it works: one over ``poll``'s
longest wait (2**31 - 1 ms, about 24.8 days: ``start_timeout=3e6``) raised ``OverflowError:
timeout is too large`` from the channel's read.
"""

from __future__ import annotations

import threading

import pytest

from pytest_hermes_kernel import ConfigError, start_kernel
from pytest_hermes_kernel.kernel.options import MAX_SECONDS, KernelOptions

DURATIONS = ["timeout", "start_timeout", "keepalive_interval", "reconnect_timeout", "orphan_timeout",
             "shutdown_grace", "exit_grace"]


def test_the_bound_is_below_the_longest_wait():
    assert MAX_SECONDS * 4 < threading.TIMEOUT_MAX  # deadlines add a few durations together


@pytest.mark.parametrize("name", DURATIONS)
def test_a_duration_over_the_bound_is_a_config_error_naming_it(name):
    with pytest.raises(ConfigError, match=f"{name} must be a finite number of seconds .*at most 1e\\+09.*got 10000000000.0"):
        KernelOptions(**{name: 1e10})
    KernelOptions(**{name: MAX_SECONDS})


@pytest.mark.parametrize("name", DURATIONS)
def test_a_kernel_with_the_longest_duration_starts_runs_and_shuts_down(name, hermes_transport):
    with start_kernel(hermes_transport, **{name: MAX_SECONDS}) as kernel:
        assert kernel.execute("6 * 7").value == "42"


@pytest.mark.parametrize("name", ["start_timeout", "shutdown_grace"])
def test_a_kernel_with_such_a_duration_is_refused_before_it_starts(name):
    with pytest.raises(ConfigError, match=name):
        start_kernel("local", **{name: 1e10})


def test_a_cells_timeout_over_the_bound_is_refused_and_the_kernel_kept():
    with start_kernel("local") as kernel:
        kernel.execute("x = 1")
        with pytest.raises(ConfigError, match="timeout must be a finite number of seconds"):
            kernel.execute("x += 1", timeout=1e10)
        assert kernel.execute("x").value == "1"
