"""A transport's numbers and interpreter are checked when it is made (found by the ssh breaker,
left by it): ``connect_timeout=nan``, ``keepalive_interval=-1``, ``mem_limit_bytes=1.5``,
``max_servers=0``, ``hold_s=nan``, ``python=""`` and ``host_key_policy="yes"`` were taken, and
failed later, far from the call (the first kernel's start, docker's answer), or never (a NaN
wait is no bound; ``"yes"`` was read as ``"reject"``). Each is a ``ConfigError`` naming the
transport, the option and the value, before anything connects (no engine or host is needed)."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport

NAN = float("nan")

REFUSED = [
    ("local", "max_servers", 0), ("local", "server_idle_timeout", -5), ("local", "python", ""),
    ("docker", "mem_limit_bytes", -1), ("docker", "mem_limit_bytes", 2.5e8), ("docker", "cpus", 0),
    ("docker", "cpus", NAN), ("docker", "orphan_timeout", NAN), ("docker", "server_idle_timeout", True),
    ("docker", "python", "pyth\0on"),
    ("ssh", "connect_timeout", NAN), ("ssh", "keepalive_interval", -1), ("ssh", "keepalive_missed", "3"),
    ("ssh", "max_sessions", 0), ("ssh", "mem_limit_bytes", 1.5), ("ssh", "orphan_timeout", 1e10),
    ("ssh", "host_key_policy", "yes"), ("ssh", "python", " "),
    ("filecell", "poll_window_s", 0), ("filecell", "hold_s", NAN), ("filecell", "launch_timeout", "x"),
    ("filecell", "orphan_timeout", -1), ("filecell", "python", ""),
]


@pytest.mark.parametrize("name, option, value", REFUSED, ids=[f"{n}-{o}-{v!r}" for n, o, v in REFUSED])
def test_a_transport_option_that_is_no_such_value_is_refused_naming_it(name, option, value):
    with pytest.raises(ConfigError) as caught:
        make_transport(name, **{option: value})

    assert str(caught.value).startswith(f"{name} transport: {option} must be "), str(caught.value)
    assert str(caught.value).endswith(f"got {value!r}"), str(caught.value)


def test_a_backend_authors_direct_call_is_checked_too():
    with pytest.raises(ConfigError, match="filecell transport: poll_window_s must be a finite number of seconds > 0"):
        FileCellTransport(poll_window_s=float("inf"))


@pytest.mark.parametrize("name, options", [
    ("local", {"python": None, "server_idle_timeout": None, "max_servers": 1}),
    ("filecell", {"orphan_timeout": None, "hold_s": 0, "poll_window_s": 0.5}),
])
def test_the_values_as_meant_are_taken(name, options):
    make_transport(name, **options).close()
