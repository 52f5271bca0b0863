"""What this repo's own test suites share (tests/, examples/, fixtures/): pytester and the
fixtures that make kernels and registries which cannot outlive their test.

Nothing here is for users of the plugin: they get every fixture they need from the plugin
(``hermes_kernel``, ``hermes_registry``, ...) and the contract suite from
``pytest_hermes_kernel.contract``. The plain helpers these fixtures use (process probes,
``wait_until``, ``CellStarted``, ...) live in :mod:`tests.support`; per-folder conftests keep
only what one folder needs (``tests/plugin``: the inner pytest runs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, KernelRegistry, start_kernel
from pytest_hermes_kernel.kernel.contract import Transport
from tests.support import FakeClock, kernel_ids_below, wait_until

pytest_plugins = ("pytester",)


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This test's own ``TMPDIR`` (0700): its kept records and run files are its alone."""
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    return tmp


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock for the registry's clock seam that the test advances by hand."""
    return FakeClock()


@pytest.fixture
def no_kernel_left_behind() -> Iterator[None]:
    """Fail the test if a local kernel process started during it still runs 5 s after it."""
    before = kernel_ids_below()
    yield
    wait_until(lambda: not (kernel_ids_below() - before), 5.0,
               what="every kernel process started by this test to end")


@pytest.fixture
def make_registry(no_kernel_left_behind: None) -> Iterator[Callable[..., KernelRegistry]]:
    """``make_registry(**kwargs)``: a :class:`KernelRegistry` (no background reaper unless asked),
    closed after the test; no local kernel of it may be left behind."""
    made: list[KernelRegistry] = []

    def make(**kwargs: Any) -> KernelRegistry:
        kwargs.setdefault("background_reaper", False)
        registry = KernelRegistry(**kwargs)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


@pytest.fixture
def make_kernel(no_kernel_left_behind: None) -> Iterator[Callable[..., KernelHandle]]:
    """``make_kernel(**options)``: a started local kernel, shut down after the test; none of its
    processes may be left behind."""
    made: list[KernelHandle] = []

    def make(**options: Any) -> KernelHandle:
        handle = start_kernel("local", **options)
        made.append(handle)
        return handle

    yield make
    for handle in made:
        handle.shutdown()


@pytest.fixture
def start() -> Iterator[Callable[..., KernelHandle]]:
    """``start(transport, **options) -> KernelHandle`` on any transport (a name or an instance);
    every kernel is shut down after the test."""
    made: list[KernelHandle] = []

    def factory(transport: Transport | str, **options: Any) -> KernelHandle:
        handle = start_kernel(transport, **options)
        made.append(handle)
        return handle

    yield factory
    for handle in made:
        handle.shutdown()


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Skip, with the reason, where no docker engine answers (docker, and ssh's sshd container)."""
    from pytest_hermes_kernel.containers.images import docker_status

    ok, why = docker_status()
    if not ok:
        pytest.skip(f"docker engine not reachable: {why}")


@pytest.fixture(params=["local", "docker", "ssh"])
def execute_backend(request: pytest.FixtureRequest) -> Any:
    """Each reference execute-only backend in turn: the local shell, docker exec into the run's
    shared container, and ssh exec channels into the run's sshd container (both skipped where no
    docker engine answers)."""
    from pytest_hermes_kernel.transports import get_transport
    from pytest_hermes_kernel.transports.filecell.backends import DockerExecBackend, LocalShellBackend

    if request.param == "local":
        return LocalShellBackend()
    from pytest_hermes_kernel.containers.images import docker_status

    ok, why = docker_status()
    if not ok:
        pytest.skip(f"docker engine not reachable: {why}")
    if request.param == "ssh":
        from pytest_hermes_kernel.transports.filecell.ssh_exec import SshExecBackend

        return SshExecBackend.over(get_transport("ssh"))
    docker = get_transport("docker")
    return DockerExecBackend(docker.shared_container(), client=docker.client)


@pytest.fixture(scope="session")
def first_docker_engine(docker_ready: None) -> str:
    """The URL of the engine the environment names (the machine's own, started by ``.ci/run``)."""
    from pytest_hermes_kernel.containers.engines import engine_client, engine_url

    client = engine_client(None)
    try:
        return engine_url(client)
    finally:
        client.close()


@pytest.fixture
def second_docker_engine(_second_engine: tuple[str, str]) -> Iterator[str]:
    """The URL (``unix://...``) of a second docker engine the test run starts itself, with the
    kit's image loaded into it from the first engine (issue 12 point 7; :mod:`tests.engines`).

    The run's tests on it take turns (a run-wide file lock, held for the test): they count the
    run's containers there and sweep it, and a sweep another worker's test starts there (an inner
    run's start-up sweep) would remove a dead run's container this test is about to sweep.
    """
    from filelock import FileLock

    url, lock_path = _second_engine
    with FileLock(lock_path, timeout=600):
        yield url


@pytest.fixture(scope="session")
def _second_engine(docker_ready: None) -> Iterator[tuple[str, str]]:
    """The second engine's URL and its turn lock's path.

    One engine per run, shared by its xdist workers (a run-wide shared resource, as the sshd
    container is: the first worker that needs it starts it, the last one to leave stops it by the
    pid started, and then no mount under its roots and no process of it may be left). Skips with
    the reason where it cannot start (not root, no ``unshare``/``dockerd``), except under
    ``CI=true``, where that fails.
    """
    from pytest_hermes_kernel.containers.sharing import SharedResource
    from tests.engines import EngineUnavailable, SecondEngine

    shared = SharedResource("engine2", "dockerd")
    try:
        record = shared.acquire(start=_start_second_engine, usable=lambda r: SecondEngine(**r).unshare_alive(),
                                discard=lambda r: SecondEngine(**r).stop())
    except EngineUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the two-engine tests: {exc}", pytrace=False)
        pytest.skip(str(exc))
    engine = SecondEngine(**record)
    left: list[str] = []
    try:
        yield engine.url, shared.side_file("turns")
    finally:
        shared.release(stop=lambda r: left.extend(_stop_second_engine(SecondEngine(**r))))
    assert not left, f"the second docker engine left behind: {left}"


def _start_second_engine() -> dict:
    """Start the second engine and load the kit's image (and its base) into it: its record."""
    import dataclasses

    from pytest_hermes_kernel.containers.engines import copy_image, engine_client
    from pytest_hermes_kernel.containers.images import BASE_TAG, ensure_image
    from tests.engines import start_second_engine

    engine = start_second_engine()
    try:
        first, second = engine_client(None, timeout=600), engine_client(engine.url, timeout=600)
        try:
            copy_image(ensure_image(first, progress=lambda _line: None), first, second)
            copy_image(BASE_TAG, first, second)  # the kit's image is up to date there only on its own base
        finally:
            first.close()
            second.close()
    except BaseException:
        _stop_second_engine(engine)
        raise
    return dataclasses.asdict(engine)


def _stop_second_engine(engine) -> list[str]:  # noqa: ANN001 - tests.engines.SecondEngine
    from tests.engines import stop_second_engine

    left = stop_second_engine(engine)
    if not left:
        engine.remove_dir()
    return left
