"""Fixtures of the regression cases that pause or kill a kernel host of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.transports.docker.transport import DockerTransport
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import transport_of_its_own


@pytest.fixture(params=[True, False], ids=["server", "spawn"])
def own_sshd(request: pytest.FixtureRequest) -> Iterator[SshTransport]:
    """An ssh transport with an sshd container of its own, to pause (removed when it closes), on
    the kernel-server and the spawn path; a module's ``SSHD_OPTIONS`` (a dict) adds transport
    options (a shorter keepalive bound, so that a pause is noticed sooner)."""
    options = getattr(request.module, "SSHD_OPTIONS", {})
    with transport_of_its_own("ssh", server=request.param, **options) as transport:
        assert isinstance(transport, SshTransport)
        yield transport


@pytest.fixture(params=[True, False], ids=["server", "spawn"])
def own_docker(request: pytest.FixtureRequest) -> Iterator[DockerTransport]:
    """A docker transport with a kernel host container of its own, to pause (removed when it
    closes), on the kernel-server and the spawn path."""
    with transport_of_its_own("docker", server=request.param) as transport:
        assert isinstance(transport, DockerTransport)
        yield transport
