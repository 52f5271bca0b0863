"""Seen: ``shutdown()`` of a docker kernel whose container is ``docker pause``d took 10.0 s on both
start paths (``2 x shutdown_grace + 6`` s waiting for the frozen runner's reply to the shutdown
request) only to report what was known after the first moment: not confirmed gone.

Now the wait for that reply asks the transport every 0.5 s whether the runner's host is frozen
(:meth:`Transport.frozen`: docker's is its container paused) and stops then. The end is as
honest as before: ``confirmed=False`` (``may_still_run``), counted in the registry's
``unconfirmed_ends``; after the unpause the runner ends (its orphan timer at the latest) and
takes its kernel dir with it.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelKey, KernelOptions
from pytest_hermes_kernel.kernel.registry import KernelRegistry
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

ORPHAN_TIMEOUT_S = 3.0
#: Well under the 10 s the shutdown took (one FROZEN_CHECK_S and a kill that is refused).
QUICK_S = 3.0


def test_a_shutdown_in_a_paused_container_ends_soon_and_says_it_is_not_confirmed(own_docker):
    registry = KernelRegistry(transport_factory=lambda _key: own_docker, background_reaper=False,
                              options=KernelOptions(orphan_timeout=ORPHAN_TIMEOUT_S))
    key = KernelKey(owner="paused", transport="docker")
    assert registry.execute(key, "x = 1").status == "ok"
    handle = registry.get_or_start(key)
    cid, kdir = handle.launched.extra["container"], handle.launched.kernel_dir
    own_docker.api.pause(cid)
    try:
        began = time.monotonic()
        registry.shutdown_owner("paused")
        took = time.monotonic() - began
    finally:
        own_docker.api.unpause(cid)
        registry.close()

    assert took < QUICK_S, f"the shutdown took {took:.1f} s"
    assert handle.exit_info is not None and handle.exit_info.may_still_run, handle.exit_info
    assert registry.stats["unconfirmed_ends"] == 1, registry.stats
    wait_until(lambda: own_docker.kernel_processes(handle.kernel_id) == [], ORPHAN_TIMEOUT_S + 5.0, interval=0.5,
               what="the runner to end after the unpause")
    code, _, _ = own_docker._run(cid, ["test", "-e", kdir])
    assert code == 1, f"the kernel dir {kdir} is still there"
