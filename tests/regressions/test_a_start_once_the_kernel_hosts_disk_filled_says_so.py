"""Found by a breaker helper (the host out of resources, 2026-12-06): once the disk of a docker
engine filled while the run's shared container ran (a cell's output files, another program), the
next kernel started in that container failed with only ``the docker kernel runner died during
start (exit code 70), before its hello``: the runner could write neither its files nor its log,
so the error had no log tail and named no cause (the spawn path's hint asked "does the image have
python3? is the container running?"). An ssh host whose disk filled said the same ``ssh kernel
runner died during start (exit code 70)`` on the kernel-server path. The start error now says the
disk has no room (docker: with the engine's disk-full hint); the kernel that ran keeps running.

The docker engine is one this module starts itself (:mod:`tests.engines`), its data root a small
tmpfs filled once the first kernel runs and emptied again after each case (both paths use it: its
start, the kit's image copied from the first engine, was most of their cost); the ssh host's home a
small tmpfs (:mod:`tests.odd_hosts`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport
from tests.engines import EngineUnavailable, SecondEngine, containers_on, engine_on_a_small_disk, fill_disk
from tests.odd_hosts import odd_ssh_host

#: MiB of the engine's data root: the kit's image loads (~175 MB unpacked, its tar beside it while it loads).
DATA_MIB = 450


@pytest.fixture(scope="module")
def small_engine(docker_ready: None, first_docker_engine: str) -> Iterator[SecondEngine]:
    """An engine of this module's own on a small disk, with the kit's images; stopped at the end."""
    try:
        with engine_on_a_small_disk(first_docker_engine, DATA_MIB) as engine:
            yield engine
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
    assert not engine.left, f"the engine left behind: {engine.left}"


@pytest.mark.hermes_allow_leaks("this module's engine is stopped in its last test's teardown")
@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_start_in_a_shared_container_whose_disk_filled_says_the_disk_is_full(small_engine: SecondEngine,
                                                                                server: bool) -> None:
    engine, filler = small_engine, os.path.join(small_engine.root, "data", f"filler-{server}")
    transport = make_transport("docker", docker_host=engine.url, server=server,
                               run_id=f"full-start-{os.getpid()}-{server}")
    try:
        first = start_kernel(transport)
        assert first.execute("x = 41").status == "ok"
        fill_disk(filler)
        with pytest.raises(KernelStartError) as info:  # "exit code 70", nothing more
            start_kernel(transport).shutdown()
        assert first.execute("x + 1").value == "42"  # the kernel that ran is kept
        first.shutdown()
    finally:
        close_transport(transport)
        forget_closed_transports()  # its engine is stopped at the module's end: later leak checks cannot ask it
        if os.path.exists(filler):
            os.remove(filler)  # the next case starts with room
    assert containers_on(engine.url) == set(), "the run left a container"
    text = str(info.value)
    assert "the docker engine's disk is full" in text, text
    assert "does the image have python3" not in text, text


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_start_on_an_ssh_host_whose_disk_filled_says_the_disk_is_full(docker_ready: None, tmp_path: Path,
                                                                         server: bool) -> None:
    with odd_ssh_host(tmp_path, tmpfs={"/home/hermes": "size=1m,mode=0755,uid=1000,gid=1000"}) as host:
        transport = host.transport(server=server)
        try:
            first = start_kernel(transport)
            assert first.execute("x = 41").status == "ok"
            host.run("dd if=/dev/zero of=/home/hermes/fill bs=1k count=2048 2>/dev/null; true")
            with pytest.raises(KernelStartError) as info:  # server: "exit code 70", nothing more
                start_kernel(transport).shutdown()
            assert first.execute("x + 1").value == "42"
            first.shutdown()
        finally:
            transport.close()
    text = str(info.value)
    assert "disk full" in text or "the ssh host's disk has 0 KiB free" in text, text
