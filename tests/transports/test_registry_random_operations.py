"""A registry driven by random operations from three threads keeps its promises on every transport
(the short, fixed-seed run of :mod:`tests.registry_fuzz`; run it long with other seeds by hand).

Each call returns its own cell's result or a package error, never hangs; a variable is kept
unless a loss of state was reported on its key; at rest the registry lists every kernel that
runs; after ``close()`` (with calls in flight for the even seeds) no kernel process, kernel dir,
registry entry or transport resource of the run is left.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelOptions, KernelRegistry
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import PROBES
from tests.registry_fuzz import listing_matches, run_fuzz, running_kernels

#: ``(seed, max_kernels, idle_timeout)``: eviction, a tiny TTL with the reaper on, both.
RUNS = [(3, 1, None), (8, 2, 0.3), (22, 3, 1.0), (67, 2, 0.3)]
KINDS = ("kernel process", "kernel dir", "registry entry", "transport resource")


@pytest.mark.hermes_transports("local", "docker", "ssh", "filecell")
@pytest.mark.parametrize(("seed", "max_kernels", "ttl_s"), RUNS, ids=[f"seed{r[0]}" for r in RUNS])
def test_random_operations_from_threads(hermes_transport, seed: int, max_kernels: int, ttl_s: float | None) -> None:
    checker = LeakChecker([p for p in PROBES if p.kind in KINDS], grace=10.0)
    before, running_before = checker.before(), running_kernels()
    registry = KernelRegistry(max_kernels=max_kernels, idle_timeout=ttl_s, options=KernelOptions(timeout=30.0),
                              transport_factory=lambda _key: hermes_transport, transport=hermes_transport.name)

    problems = run_fuzz(registry, seed, threads=3, steps=10, ttl_s=ttl_s, close_in_flight=seed % 2 == 0,
                        at_rest=listing_matches(running_before))

    assert not problems, "\n".join(problems)
    assert len(registry) == 0
    report = checker.after(before)
    assert not report, report.format(f"seed {seed}")
