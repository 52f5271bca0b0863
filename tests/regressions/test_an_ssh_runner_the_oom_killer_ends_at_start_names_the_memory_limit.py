"""Seen (a breaker helper, 2026-12-06): an ssh kernel in the kit's sshd container under a memory
limit too small for the runner (``hermes_oom(limit_bytes=16 MiB)``: ``mem_limit_bytes``,
``container="fresh"``) failed its start with "the ssh kernel runner ended during start, before its
hello: ... closed: end of stream (the kernel runner or its relay is gone)", on both paths: nothing of
the OOM kill that ended it, nor of the limit, where a docker kernel's start names both
(``test_a_runner_killed_by_a_tiny_memory_limit_says_so.py``). The runner log's section now adds the
sshd container's OOM kills, as docker's does.
"""

from __future__ import annotations

import re

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import KernelStartError
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")

TOO_SMALL = 16 * 2**20  # hermes_oom's smallest: the sshd runs, the runner is OOM-killed before its hello


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_the_start_error_names_the_oom_kill_and_the_limit(server: bool) -> None:
    with transport_of_its_own("ssh", server=server, mem_limit_bytes=TOO_SMALL, container="fresh") as transport:
        with pytest.raises(KernelStartError) as raised:
            with start_kernel(transport, start_timeout=30):
                pytest.skip("the runner started under 16 MiB here: nothing to name")
    message = str(raised.value)
    # one kill or more: under that pressure the killer may take the supervisor and its worker both
    # (2 of 5 runs on a loaded machine, 2026-12-07), and the server path's server too
    kills = re.search(r"the container's memory cgroup counts (\d+) OOM kill\(s\)", message)
    assert kills and int(kills.group(1)) >= 1, message
    assert f"its memory limit (mem_limit_bytes={TOO_SMALL}) is the likely cause" in message, message
