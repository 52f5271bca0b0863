"""``hermes_host_sigkill`` runs the test's kernel in the host harness, a process of its own
that makes its own transport: a transport option the test's other markers need (``hermes_oom``'s
memory limit and fresh container on docker and ssh, ``hermes_kernel(container="fresh")``) never
reached it. The kernel ran in the run's shared container without a limit and the test went on
as if it had one (a hog meant to be OOM-killed took the machine's memory instead). Where the
harness cannot honour them, the leg skips with the reason."""

from __future__ import annotations

import pytest

BOUNDED_HOG = "hog = []\nfor _ in range(24): hog.append(b'x' * (32 * 2**20))\nlen(hog)"
"""768 MiB at most: over the limit below, and bounded where no limit holds."""


@pytest.mark.hermes_oom(limit_bytes=256 * 2**20)
@pytest.mark.hermes_host_sigkill(after_cell=1)
def test_an_oom_kernel_whose_host_is_killed_runs_under_its_limit(hermes_kernel) -> None:
    r = hermes_kernel.execute(BOUNDED_HOG, timeout=120)
    assert r.status == "died" and r.kernel.reason == "oom_killed", r.summary()


@pytest.mark.hermes_transport_drop("reset", after_cell=1)
@pytest.mark.hermes_host_sigkill(after_cell=2)
def test_a_drop_beside_a_host_sigkill_reaches_the_kernel(hermes_kernel) -> None:
    """The drop met the harness kernel's stream out of its reach: the test's second cell raised
    ``transport_drop: ... does not run on a FaultyTransport. Hint: mark the test with
    hermes_transport_drop(...)``, which it was."""
    hermes_kernel.execute("x = 1")
    r = hermes_kernel.execute("x")
    assert r.value == "1" and r.kernel.reconnected, r.summary()
