"""A cell's ``os.kill(-1, SIGKILL)`` in a shared docker container, as docs/reference.md tells it.

Kernels of one container run as one user, so such a cell ends every process of that user there,
its siblings' and the container's keeper included: the container exits. What a user must see is
each kernel saying so at its next cell (``died``, ``transport_lost``, no hang, no ``ok`` from a
namespace that is gone) and the next start working in a new container.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_cell_that_kills_every_process_of_its_user_ends_its_siblings_honestly(server: bool) -> None:
    with transport_of_its_own("docker", server=server) as transport:
        killer, sibling = KernelHandle(transport).start(), KernelHandle(transport).start()
        try:
            first = killer.launched.extra["container"]
            assert sibling.launched.extra["container"] == first
            assert sibling.execute("y = 2").status == "ok"

            ended = killer.execute("import os, signal; os.kill(-1, signal.SIGKILL)")
            lost = sibling.execute("y")

            for result in (ended, lost):
                assert (result.status, result.kernel.state_lost) == ("died", True), result.summary()
                assert result.kernel.reason == "transport_lost", result.summary()
            again = sibling.execute("y = 3; y")
            assert again.value == "3", again.summary()
            assert sibling.launched.extra["container"] != first  # the old container had exited
        finally:
            killer.shutdown()
            sibling.shutdown()
