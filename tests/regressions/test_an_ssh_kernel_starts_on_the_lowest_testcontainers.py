"""Found by the breaker session that installed the declared minimums (``testcontainers>=4.4``): the
sshd container was made with ``DockerContainer.with_envs``, which testcontainers 4.4 does not have,
so every ssh kernel failed to start with ``AttributeError: 'DockerContainer' object has no attribute
'with_envs'`` (the docker transport, which starts its containers through docker-py, worked). The
newest testcontainers has the method; this test takes it away, as 4.4 is."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from tests.support import transport_of_its_own


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_an_ssh_kernel_starts_without_with_envs(docker_ready, monkeypatch, server):
    from testcontainers.core.container import DockerContainer

    monkeypatch.delattr(DockerContainer, "with_envs", raising=False)
    with transport_of_its_own("ssh", server=server) as transport:
        with start_kernel(transport) as kernel:
            assert kernel.execute("6 * 7").value == "42"
