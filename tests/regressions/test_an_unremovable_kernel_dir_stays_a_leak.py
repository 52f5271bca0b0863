"""A kernel dir its cleanup could not remove is still reported by the leak check.

A cell can leave its kernel dir (its working dir) in a state the cleanup's ``rm -rf`` cannot
undo: a subdir it made read-only, holding a file. The ssh transport forgot the dir whatever
``rm`` said (its exit status was not read), and a kernel server (docker, ssh) answered "removed"
whatever its ``rmtree`` left, so the leak check stopped looking for it: a kernel dir left on the
host and a clean leak check (seen by the soak round of 2026-12-05). Now the dir is forgotten only
once it is gone.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")

LOCK_A_SUBDIR = ("import os; os.makedirs('locked/sub'); open('locked/sub/f', 'w').close(); "
                 "os.chmod('locked', 0o500); os.getcwd()")


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_kernel_dir_its_cleanup_could_not_remove_is_still_a_leak(name: str, server: bool) -> None:
    with transport_of_its_own(name, server=server) as transport:  # (closing it removes its containers)
        with start_kernel(transport) as kernel:
            kdir = kernel.execute(LOCK_A_SUBDIR).value.strip("'")
            container = kernel.launched.extra.get("container")
        left = transport.leak_snapshot(0).get("remote kernel dir", {})
        reported = any(kdir in where for where in left.values())
        assert reported == _exists(transport, container, kdir), \
            f"{kdir} is {'' if reported else 'not '}reported by the leak check: {left}"


def _exists(transport, container: str | None, path: str) -> bool:
    """Whether ``path`` exists where the kernel ran (docker: the engine's root; ssh: its login)."""
    argv = ["test", "-e", path]
    if container is not None:
        return transport._run(container, argv)[0] == 0
    return transport.current_connection.run(" ".join(argv), timeout=10.0)[0] == 0
