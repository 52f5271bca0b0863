"""A docker kernel kept for post-mortem, in one process (issue 12, point 2): kept, reached again
by another transport instance from its locator (kernel-server and spawn paths), not a leak, and
its container outlives the run's last member while a kept record names it.

The run (what outlives pytest, the CLI) is tested in ``tests/plugin/test_keep_failed_docker.py``.
Here the containers' host is this process, so no sweep of another run removes them meanwhile.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.containers.labels import LABEL_TMPDIR
from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.kernel.handle import KernelHandle, attach_kept
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture(params=[True, False], ids=["server", "spawn"])
def docker_pair(request: pytest.FixtureRequest, private_tmp: Path) -> Iterator[tuple]:
    """Two docker transports of one run: the one that keeps, and the one that reaches the kept kernel."""
    from pytest_hermes_kernel.containers.lifecycle import remove_container
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    run_id = f"keep-{os.getpid()}-{time.monotonic_ns()}"
    first = DockerTransport(server=request.param, run_id=run_id)
    second = DockerTransport(server=request.param, run_id=run_id)
    made: list[str] = []
    try:
        yield first, second, made
    finally:
        first.close()
        second.close()
        for cid in made:
            remove_container(cid)


def _keep(transport, ttl: float = 60.0) -> tuple[kept.KeptKernel, int]:  # noqa: ANN001
    handle = KernelHandle(transport).start()
    assert handle.execute("evidence = 'left by the failed test'").ok
    record = kept.KeptKernel(kernel_id=handle.kernel_id, transport="docker", locator=transport.locator(handle.launched),
                             token=handle.token, nodeid="t", kept_at=time.time(), detached_at=time.time(), ttl_s=ttl,
                             host_pid=os.getpid())
    kept.save(record)
    runner_pid = handle.launched.pid
    assert handle.keep(ttl).step == "kept" and not handle.alive
    return record, runner_pid


def test_a_kept_docker_kernel_is_reached_again_from_its_locator(docker_pair):
    first, second, made = docker_pair
    record, runner_pid = _keep(first)
    made.append(record.locator["container_id"])

    assert first.kernel_processes(record.kernel_id, record.locator), "the kept kernel runs on"
    handle = attach_kept(second, record.locator, kernel_id=record.kernel_id, token=record.token)
    r = handle.execute("evidence")
    assert (r.status, r.value) == ("ok", "'left by the failed test'")
    assert handle.keep(60.0).step == "kept"
    again = attach_kept(second, record.locator, kernel_id=record.kernel_id, token=record.token)
    assert again.execute("evidence").value == "'left by the failed test'"  # kept across attaches
    again.shutdown()
    assert not second.kernel_processes(record.kernel_id, record.locator)
    with pytest.raises(TransportLostError):
        attach_kept(second, record.locator, kernel_id=record.kernel_id, token=record.token)


def test_a_wrong_token_is_refused_and_the_kernel_stays_kept(docker_pair):
    first, second, made = docker_pair
    record, _ = _keep(first)
    made.append(record.locator["container_id"])

    with pytest.raises(TransportLostError):
        attach_kept(second, record.locator, kernel_id=record.kernel_id, token="not-the-token")
    handle = attach_kept(second, record.locator, kernel_id=record.kernel_id, token=record.token)
    assert handle.execute("evidence").ok
    handle.shutdown()


def test_the_leak_probe_does_not_list_a_kept_kernel_but_still_lists_others(docker_pair):
    first, _second, made = docker_pair
    before = first.leak_snapshot(os.getpid())
    record, runner_pid = _keep(first)
    made.append(record.locator["container_id"])
    other = KernelHandle(first).start()  # a kernel the test forgot: still a leak
    try:
        after = first.leak_snapshot(os.getpid())
        new = {kind: set(found) - set(before.get(kind, {})) for kind, found in after.items()}
        named = " ".join(i for ids in new.values() for i in ids)
        assert record.kernel_id not in named and record.locator["kernel_dir"] not in named, new
        assert other.kernel_id in named, "the forgotten kernel is still listed"
    finally:
        other.shutdown()


def test_the_runs_last_member_leaves_a_container_that_holds_a_kept_kernel(docker_pair):
    first, second, made = docker_pair
    record, _ = _keep(first)
    cid = record.locator["container_id"]
    made.append(cid)

    first.close()  # the run's last member: the container would go with it
    assert first.container_running(cid), "a container holding a kept kernel outlives the run"
    handle = attach_kept(second, record.locator, kernel_id=record.kernel_id, token=record.token)
    assert handle.execute("evidence").ok
    handle.shutdown()
    kept.remove(record.kernel_id)


def test_a_crashed_hosts_reap_in_the_runs_containers_leaves_its_kept_kernel(docker_pair):
    """B41's reap of a crashed xdist worker's kernels (the controller asks inside the run's
    containers) spares a kernel that worker kept for post-mortem: it killed it, and the user's
    record pointed at nothing. Its other kernels there are still killed."""
    from pytest_hermes_kernel.plugin.crashes import reap_in_containers

    first, _second, made = docker_pair
    record, _ = _keep(first)
    made.append(record.locator["container_id"])
    other = KernelHandle(first).start()  # the crashed host's kernel that nobody kept
    try:
        assert reap_in_containers(os.getpid(), first.run_id) >= 1, "the unkept kernel is still reaped"
        wait_until(lambda: not other.transport.alive(other.launched), 5.0, what="the unkept kernel to be reaped")
        assert first.kernel_processes(record.kernel_id, record.locator), "the kept kernel was reaped"
    finally:
        other.shutdown()
    kept.remove(record.kernel_id)
    assert reap_in_containers(os.getpid(), first.run_id) >= 1, "once its record is gone, it is reaped"
    wait_until(lambda: not first.kernel_processes(record.kernel_id, record.locator), 5.0,
               what="the no longer kept kernel to be reaped")


def test_a_record_is_found_through_the_containers_tmpdir_label(private_tmp, tmp_path, monkeypatch):
    record = kept.KeptKernel(kernel_id="k1", transport="docker", locator={"container_id": "c" * 64}, token="t",
                             nodeid="n", kept_at=time.time(), detached_at=time.time(), ttl_s=60.0, host_pid=1)
    kept.save(record)
    elsewhere = {LABEL_TMPDIR: str(private_tmp)}

    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a sweep run with another temp dir
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert not kept.exempt_container_ids() and kept.holds_kept_kernel("c" * 64, elsewhere)
    assert not kept.holds_kept_kernel("c" * 64, {}) and not kept.holds_kept_kernel("d" * 64, elsewhere)
    expired = dataclasses.replace(record, detached_at=time.time() - 120.0)
    kept.save(expired, str(private_tmp))
    assert not kept.holds_kept_kernel("c" * 64, elsewhere), "an expired kept kernel holds nothing"
