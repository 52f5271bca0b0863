"""The backend contract suite again, on the spawn path: transports that fork kernels from a kernel
server by default (issue #11) must keep every contract when each runner is a new process
(``server=False``), which is also what they fall back to when the server is gone."""

import pytest

from pytest_hermes_kernel.contract import *  # noqa: F401,F403

pytestmark = [pytest.mark.hermes_kernel(server=False), pytest.mark.hermes_transports("local", "docker", "ssh")]
