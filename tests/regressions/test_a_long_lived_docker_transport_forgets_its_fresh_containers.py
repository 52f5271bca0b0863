"""Seen (the endurance round, 2026-12-06): a docker transport with ``container="fresh"`` (one
container per kernel) remembered when each container it ever started last started
(``KernelHosts._started``, read to tell a restarted container from the one a runner was launched
in), also after the container was removed at its kernel's end: one entry per kernel, for as long
as the transport lived (6 kernels, 6 entries).

Now a fresh container's entry goes when the container is removed at its kernel's end.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from tests.support import transport_of_its_own

KERNELS = 3  # with the bug each leaves its container's start: 3 where none may stay


@pytest.mark.usefixtures("docker_ready")
def test_kernels_in_fresh_containers_leave_no_record_of_them():
    with transport_of_its_own("docker", server=False, container="fresh") as transport:
        for _ in range(KERNELS):
            with start_kernel(transport) as kernel:
                assert kernel.execute("1").value == "1"

        kept = transport.hosts._started  # type: ignore[attr-defined]
        assert len(kept) == 0, f"{len(kept)} removed fresh containers remembered after {KERNELS} kernels"
