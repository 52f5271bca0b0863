"""Found by a breaker helper (the spare kernel, 2026-12-07): a docker kernel host at its pids
limit (``docker run --pids-limit``, the container's ``pids.max``; reached by a cell's ``sleep``
processes here). On the server path the next start took the server's spare, forked ahead
(kernel/runner/spare.py: it needs no new process), as it should; the start after it found no
spare, the server's fork was refused, and the plain spawn it fell back to started its runner
(an exec joins the container's cgroup, which a pids limit does not refuse) whose own fork was
refused too. The start error was the runner's ``BlockingIOError: [Errno 11] Resource temporarily
unavailable`` traceback with ``Hint: run `docker exec ... python3 -V`; is 'python3' the
container's python?``: a wrong interpreter, not the limit. It now names the pids limit and what to
do, as the ssh transport's start names the login's ``ulimit -u``; the spawn path's the same.
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.regressions.test_a_new_worker_refused_at_the_process_limit_says_so_and_the_kernel_recovers import FILL_CELL
from tests.support import PIDS_V1, kernels_shut_down_after, transport_of_its_own, wait_until  # noqa: F401 - fixture
from tests.transports.test_a_remote_kernel_from_the_servers_spare import processes

pytestmark = pytest.mark.usefixtures("docker_ready")


def _write(group: str, name: str, value: str) -> None:
    with open(os.path.join(group, name), "w") as fh:
        fh.write(value)


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_start_at_the_containers_pids_limit_names_it(server: bool, kernels: list) -> None:
    with transport_of_its_own("docker", server=server) as transport:
        first = start_kernel(transport)
        kernels.append(first)
        group = os.path.join(PIDS_V1, "docker", first.start().launched.extra["container"])  # type: ignore[union-attr]
        if os.geteuid() != 0 or not os.path.exists(os.path.join(group, "pids.max")):
            pytest.skip("needs root and the container's cgroup v1 pids group")
        if server:  # the server's spare, forked ahead: a supervisor and its worker beside the first kernel's
            runner_of_server = processes(first)[first.runner_pid][0]
            wait_until(lambda: sum(ppid == runner_of_server for ppid, _ in processes(first).values()) == 2, 15.0,
                       what="the kernel server's spare")
        with open(os.path.join(group, "pids.current")) as fh:
            _write(group, "pids.max", str(int(fh.read()) + 4))
        try:
            assert first.execute(FILL_CELL).status == "ok"
            if server:  # the spare needs no new process: a start at the limit takes it
                taken = start_kernel(transport)
                kernels.append(taken)
                assert taken.execute("1 + 1").value == "2"
            with pytest.raises(KernelStartError) as info:
                kernels.append(start_kernel(transport))
        finally:
            _write(group, "pids.max", "max")
        text = str(info.value)
        assert "Resource temporarily unavailable" in text, text
        assert "the container has run out of processes (its pids limit, `docker run --pids-limit`" in text, text
        assert "the container's python?" not in text, text
        after = start_kernel(transport)  # the limit raised: a start works again
        kernels.append(after)
        assert after.execute("2 + 2").value == "4"
