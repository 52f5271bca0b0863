"""Fixtures of the regression cases that pause or kill a kernel host of their own, and a short dir."""

from __future__ import annotations

import io
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

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


#: Where :func:`image_without_python3` has its Python (``python3`` is on no PATH there).
PYTHON_ELSEWHERE = "/opt/py/bin/python3"
DOCKERFILE = ("FROM {base}\nUSER root\nRUN real=$(readlink -f /usr/bin/python3) && mkdir -p /opt/py/bin && "
              f"ln -s \"$real\" {PYTHON_ELSEWHERE} && rm /usr/bin/python3 && ! command -v python3\n")


@pytest.fixture(scope="module")
def image_without_python3() -> Iterator[str]:
    """The kernel host image with its Python at :data:`PYTHON_ELSEWHERE` only (removed after)."""
    import docker

    from pytest_hermes_kernel.containers.images import ensure_image

    client = docker.from_env(timeout=600)
    tag = f"hermes-python-elsewhere-{uuid.uuid4().hex[:12]}:latest"
    base = ensure_image(client, progress=lambda _line: None)
    client.images.build(fileobj=io.BytesIO(DOCKERFILE.format(base=base).encode()), tag=tag, pull=False, rm=True)
    try:
        yield tag
    finally:
        try:
            client.images.remove(tag, force=True)
        finally:
            client.close()


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A new dir under /tmp: a filecell root is at most 70 bytes (unix socket paths are short), and
    an xdist worker's ``tmp_path`` is longer."""
    where = Path(tempfile.mkdtemp(prefix="hermes-fc-"))
    try:
        yield where
    finally:
        shutil.rmtree(where)
