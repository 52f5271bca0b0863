"""Seen: a docker kernel whose container's memory limit is too small for the runner to start
(``mem_limit_bytes=6 MiB``: the OOM killer ends ``python3`` at once, exit code 137) failed with
"did not report ready (exit code 137) ... Hint: ... is 'python3' the container's python?": the
hint sent the user after the interpreter, not the limit they set.

Now a runner that ended by SIGKILL (exit code 137) before it was ready says it was killed, and with
a memory limit set names it (``mem_limit_bytes``) as the likely cause.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.transports.docker.transport import DockerTransport
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")

#: The engine's smallest memory limit: too small for python3 to start in.
TINY = 6 * 2**20


def test_a_runner_the_oom_killer_ends_at_start_names_the_memory_limit():
    with transport_of_its_own("docker", server=False, container="fresh", mem_limit_bytes=TINY) as transport:
        assert isinstance(transport, DockerTransport)
        with pytest.raises(KernelStartError) as raised:
            start_kernel(transport, start_timeout=20)
    message = str(raised.value)
    assert "exit code 137" in message and "SIGKILL" in message, message
    assert f"mem_limit_bytes={TINY}" in message, message
    assert "the container's python?" not in message, message


#: Enough for ``python3`` to start, too little for the runner to say hello: the OOM killer ends it
#: after it was ready (both paths), so no exit code 137 reaches the host.
SMALL = 12 * 2**20


@pytest.mark.parametrize("server", [True, False], ids=["forked", "spawned"])
def test_a_runner_the_oom_killer_ends_before_its_hello_names_the_memory_limit(server):
    """Seen: with ``mem_limit_bytes`` of 8 or 12 MiB the start failed with "ended during start,
    before its hello: ... closed: end of stream" only (docs/reference.md: a limit too small for the
    runner to start is a ``KernelStartError`` that names the limit as the likely cause)."""
    with transport_of_its_own("docker", server=server, container="fresh", mem_limit_bytes=SMALL) as transport:
        with pytest.raises(KernelStartError) as raised:
            start_kernel(transport, start_timeout=20)
    message = str(raised.value)
    assert "OOM kill" in message and f"(mem_limit_bytes={SMALL}) is the likely cause" in message, message


def test_a_shared_containers_earlier_oom_kill_is_not_named_the_likely_cause_of_a_later_start():
    """A shared container's memory cgroup counts every kernel's OOM kills: one a cell caused (a
    test of ``oom_killed``) was named "the likely cause" of any later start that failed in it
    (the review of 2026-12-05)."""
    with transport_of_its_own("docker", server=False, mem_limit_bytes=256 * 2**20) as transport:
        with start_kernel(transport) as hog:
            hog.execute("x = bytearray(1024 * 2**20); x[::4096] = b'1' * len(x[::4096])")
        with start_kernel(transport) as healthy:
            said = transport.runner_log(healthy.launched)
    assert "OOM kill" in said and "in all its kernels so far" in said, said
    assert "the likely cause" not in said and "a possible cause" in said, said
