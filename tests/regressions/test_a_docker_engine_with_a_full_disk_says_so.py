"""Seen: on a docker engine whose disk (its data root) was full, a kernel start failed with
``ContainerStartError: could not start a container from hermes-kernel-host:latest on the docker
engine at URL: 500 Server Error ... no space left on device`` and the hint "build it with
`hermes-kernel build-image`; is dockerd running?": the image was there and dockerd answered. An
image copied into such an engine (``--hermes-docker-hosts``) hinted at the same ``docker save |
docker load`` by hand, which fails the same way. Both hints now say the engine's disk is full and
how to see what holds it; nothing of the start is left on the engine.

The engine is one this test starts itself (:mod:`tests.engines`), its data root a small tmpfs.
Both start cases (shared, fresh) use one engine with the kit's images: its start (an image copied
from the first engine) was most of their cost, and each case fills what room the last left first.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.errors import ContainerStartError, KernelStartError
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport
from tests.engines import EngineUnavailable, SecondEngine, containers_on, engine_on_a_small_disk, fill_disk

#: MiB of the engine's data root: the kit's image loads (~175 MB unpacked, its tar beside it while it loads).
DATA_MIB = 450


@contextlib.contextmanager
def _full_engine(first_docker_engine: str, *, images: bool) -> Iterator[SecondEngine]:
    """An engine of this test's own, with the kit's images loaded from the first engine or none,
    then its disk filled (an image cannot be removed then: the engine writes its list)."""
    try:
        with engine_on_a_small_disk(first_docker_engine, DATA_MIB, images=images) as engine:
            fill_disk(os.path.join(engine.root, "data", "filler"))
            yield engine
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
    assert not engine.left, f"the engine left behind: {engine.left}"


@pytest.fixture(scope="module")
def _engine_with_images(docker_ready: None, first_docker_engine: str) -> Iterator[SecondEngine]:
    with _full_engine(first_docker_engine, images=True) as engine:
        yield engine


@pytest.fixture
def full_engine(_engine_with_images: SecondEngine, request: pytest.FixtureRequest) -> SecondEngine:
    """The module's full engine, its disk filled again (whatever room an earlier case's start gave back)."""
    fill_disk(os.path.join(_engine_with_images.root, "data", f"filler-{request.node.name}"))
    return _engine_with_images


@pytest.fixture
def full_engine_without_images(docker_ready: None, first_docker_engine: str) -> Iterator[SecondEngine]:
    with _full_engine(first_docker_engine, images=False) as engine:
        yield engine


OWN = pytest.mark.hermes_allow_leaks("this test's (or module's) engine is stopped in its teardown; it counts the "
                                     "containers there")


def _refused_start(transport) -> str:  # noqa: ANN001
    with pytest.raises((ContainerStartError, KernelStartError)) as caught:
        KernelHandle(transport).start()
    return str(caught.value)


@OWN
@pytest.mark.parametrize("container", ["shared", "fresh"])
def test_a_start_on_an_engine_with_a_full_disk_says_the_disk_is_full(full_engine, container):
    transport = make_transport("docker", docker_host=full_engine.url, container=container,
                               run_id=f"full-disk-{os.getpid()}-{container}")
    try:
        said = _refused_start(transport)
        assert "no space left on device" in said, said
        assert "the docker engine's disk is full" in said and "build-image" not in said, said
        assert containers_on(full_engine.url) == set(), "the failed start left a container"
    finally:
        close_transport(transport)
        forget_closed_transports()


@OWN
def test_an_image_copied_into_an_engine_with_a_full_disk_says_the_disk_is_full(full_engine_without_images,
                                                                               first_docker_engine):
    full_engine = full_engine_without_images
    transport = make_transport("docker", docker_hosts=(first_docker_engine, full_engine.url),
                               run_id=f"full-disk-copy-{os.getpid()}")
    kernels, refusals = [], []
    try:
        for _ in range(2):  # one start goes to each engine (which first depends on the xdist worker)
            try:
                kernels.append(KernelHandle(transport).start())
            except (ContainerStartError, KernelStartError) as exc:
                refusals.append(str(exc))
        assert len(kernels) == 1 and len(refusals) == 1, refusals
        said = refusals[0]
        assert "could not load image" in said and "no space left on device" in said, said
        assert "the docker engine's disk is full" in said and "docker load" not in said, said
    finally:
        for kernel in kernels:
            kernel.shutdown()
        close_transport(transport)
        forget_closed_transports()


def test_a_build_that_ran_out_of_disk_says_the_disk_is_full() -> None:
    """A ``docker build`` (or the base's ``docker import``) the engine's full disk stopped said
    "is dockerd running? is debootstrap installed? is the Debian mirror reachable?"."""
    from pytest_hermes_kernel.containers.images import _build_error

    error = _build_error("docker build failed: failed to copy files: copy file range failed: no space left on device",
                         ["Step 3/9 : COPY kernel /opt/hermes", "failed to copy files: no space left on device"])

    assert "the docker engine's disk is full" in str(error) and "debootstrap" not in str(error), error
