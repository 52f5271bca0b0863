"""SharedResource: one resource per run, joined by many, stopped by the last live member."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import sharing
from pytest_hermes_kernel.containers.sharing import SharedResource
from pytest_hermes_kernel.errors import ConfigError, ContainerStartError
from pytest_hermes_kernel.procs import start_time


class Recorder:
    def __init__(self) -> None:
        self.started = 0
        self.stopped: list[dict] = []
        self.discarded: list[dict] = []
        self.usable = True

    def start(self) -> dict:
        self.started += 1
        return {"container_id": f"c{self.started}"}

    def acquire(self, res: SharedResource) -> dict:
        return res.acquire(self.start, lambda r: self.usable, self.discarded.append)


def test_second_member_joins_and_the_last_one_stops(tmp_path):
    rec = Recorder()
    a = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    b = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))

    assert rec.acquire(a) == rec.acquire(b) == {"container_id": "c1"}
    assert rec.started == 1 and len(a.members()) == 2

    assert a.release(rec.stopped.append) is False
    assert rec.stopped == []
    assert b.release(rec.stopped.append) is True
    assert rec.stopped == [{"container_id": "c1"}]
    assert not os.path.exists(b.state_path) and not os.path.exists(b.lock_path)
    assert not os.path.exists(b.run_dir), "the run's last member removes the run dir"


def test_a_start_cut_short_leaves_no_file_and_the_next_member_starts_afresh(tmp_path):
    """B40: pytest-timeout's signal method (or Ctrl-C) raises inside the resource's start; the
    lock file stayed, and the run's directory with it, after the run had ended."""
    res = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))

    def cut_short() -> dict:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        res.acquire(cut_short, lambda r: True, lambda r: None)

    assert not os.path.exists(res.run_dir), os.listdir(res.run_dir)
    rec = Recorder()
    assert rec.acquire(SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))) == {"container_id": "c1"}


def test_a_start_cut_short_beside_a_live_member_leaves_that_members_files(tmp_path):
    rec = Recorder()
    first = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    rec.acquire(first)
    rec.usable = False  # the next member finds it broken and starts its own, which is cut short

    def cut_short() -> dict:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SharedResource("docker", "k", run_id="run1", directory=str(tmp_path)).acquire(
            cut_short, lambda r: rec.usable, rec.discarded.append)

    assert first.members() == [first.member] and os.path.exists(first.lock_path)


def test_other_runs_and_other_options_do_not_share(tmp_path):
    rec = Recorder()
    rec.acquire(SharedResource("docker", "k", run_id="run1", directory=str(tmp_path)))
    rec.acquire(SharedResource("docker", "k", run_id="run2", directory=str(tmp_path)))
    rec.acquire(SharedResource("docker", "other", run_id="run1", directory=str(tmp_path)))

    assert rec.started == 3


def test_an_unusable_resource_is_discarded_and_replaced(tmp_path):
    rec = Recorder()
    a = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    rec.acquire(a)
    rec.usable = False

    again = rec.acquire(SharedResource("docker", "k", run_id="run1", directory=str(tmp_path)))

    assert again == {"container_id": "c2"} and rec.discarded == [{"container_id": "c1"}]


def test_members_whose_process_died_are_dropped(tmp_path):
    rec = Recorder()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    a = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    rec.acquire(a)
    state = json.loads(Path(a.state_path).read_text())
    state["members"].append(f"{dead.stdout.strip()}:1.0:deadbeef")  # a SIGKILLed worker's entry
    Path(a.state_path).write_text(json.dumps(state))

    assert a.release(rec.stopped.append) is True  # the dead member does not keep it
    assert rec.stopped == [{"container_id": "c1"}]


def test_release_without_acquire_does_nothing(tmp_path):
    rec = Recorder()
    assert SharedResource("docker", "k", run_id="r", directory=str(tmp_path)).release(rec.stopped.append) is False
    assert rec.stopped == []


def test_run_id_is_made_once_set_explicitly_and_never_exported(monkeypatch):
    monkeypatch.setattr(sharing, "_run_id", None)
    environ_before = dict(sharing.os.environ)

    made = sharing.current_run_id()
    assert made and sharing.current_run_id() == made

    assert sharing.use_run_id("run-7.b_x") == made
    assert sharing.current_run_id() == "run-7.b_x"
    assert dict(sharing.os.environ) == environ_before  # handed on explicitly, never through the environment


@pytest.mark.parametrize("bad", ["", "-leading-dash", "has space", "slash/y", "x" * 129])
def test_a_run_id_that_cannot_name_files_and_labels_is_refused(monkeypatch, bad):
    monkeypatch.setattr(sharing, "_run_id", "kept")
    with pytest.raises(ConfigError, match="run id"):
        sharing.use_run_id(bad)
    assert sharing.current_run_id() == "kept"


def test_worker_id_outside_xdist_is_controller(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert sharing.worker_id() == "controller"
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert sharing.worker_id() == "gw1"


def _member(directory: str, barrier, log: str) -> None:
    res = SharedResource("docker", "k", run_id="par", directory=directory)

    def start() -> dict:
        with open(log, "a") as fh:
            fh.write("start\n")
        return {"container_id": "c"}

    def stop(_r: dict) -> None:
        with open(log, "a") as fh:
            fh.write("stop\n")

    res.acquire(start, lambda r: True, lambda r: None)
    barrier.wait(30)  # every process is a member at once
    res.release(stop)


def test_parallel_processes_start_once_stop_once_and_leave_no_file(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(6)
    log = str(tmp_path / "log")
    procs = [ctx.Process(target=_member, args=(str(tmp_path), barrier, log)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    codes = [p.exitcode for p in procs]
    for p in procs:
        p.close()  # its sentinel pipe

    assert codes == [0] * 6
    assert Path(log).read_text().split() == ["start", "stop"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log", f"pytest-hermes-kernel-{os.getuid()}"]
    assert list((tmp_path / f"pytest-hermes-kernel-{os.getuid()}").iterdir()) == []  # no run dir, state or lock


def _shared_labels(state_file: str, host_pid: int) -> dict[str, str]:
    import socket


    from pytest_hermes_kernel.containers import labels

    return {labels.LABEL: "1", labels.LABEL_HOSTNAME: socket.gethostname(), labels.LABEL_STATE_FILE: state_file,
            labels.LABEL_HOST_PID: str(host_pid), labels.LABEL_HOST_START: f"{start_time(host_pid):.3f}"}


def test_a_shared_container_started_but_not_yet_recorded_is_in_use_while_its_creator_lives(tmp_path):
    """The first member starts the container, then writes the state file: a sweep of another
    session in between must not take a container that is about to be used."""
    from pytest_hermes_kernel.containers.sweep import in_use

    res = SharedResource("docker", "k", run_id="rec", directory=str(tmp_path))
    labels = _shared_labels(res.state_path, sharing.os.getpid())

    assert in_use(labels), "no state file yet, the creator lives"

    res.acquire(lambda: {"container_id": "c"}, lambda r: True, lambda r: None)
    assert in_use(labels), "recorded, with a live member"
    res.release(lambda r: None)
    os.makedirs(os.path.dirname(res.state_path), mode=0o700, exist_ok=True)  # the last member removed it
    Path(res.state_path).write_text(json.dumps({"resource": {"container_id": "c"}, "members": ["1:-1000.0:dead"]}))
    assert not in_use(labels), "recorded, and every member is gone: the creator alone does not keep it"


def test_a_resource_whose_members_crashed_stays_in_use_for_other_runs_while_its_runs_controller_lives(
        tmp_path, monkeypatch):
    """B39/B41: an xdist run's workers all crashed; its controller lives and removes the run's
    container at its end. Another run's start-up sweep (seen: an inner run of the suite's own
    tests) took it first: a live run's container touched by another run. The workers record
    their controller as the run's anchor; the run's own checks (its leak probe, its
    controller's removal) ask without it."""
    from pytest_hermes_kernel.containers.sweep import in_use

    controller = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        monkeypatch.setattr(sharing, "_anchor", None)
        sharing.use_run_anchor(sharing.process_anchor(controller.pid))
        worker = SharedResource("docker", "k", run_id="crashed", directory=str(tmp_path))
        worker.acquire(lambda: {"container_id": "c"}, lambda r: True, lambda r: None)
        state = json.loads(Path(worker.state_path).read_text())
        state["members"] = ["1:-1000.0:dead"]  # the worker crashed: it never left
        Path(worker.state_path).write_text(json.dumps(state))
        labels = _shared_labels(worker.state_path, os.getpid())

        assert sharing.held(worker.state_path) and in_use(labels), "the run's controller lives"
        assert not sharing.held(worker.state_path, anchor=False) and not in_use(labels, anchor=False)
        controller.kill()
        controller.wait()
        assert not in_use(labels), "the whole run is gone: any sweep may remove it"
    finally:
        controller.kill()
        controller.wait()
        sharing.use_run_anchor(None)


class _Engine:
    """A docker client whose ``remove_container`` answers as the engine did for a second sweep."""

    def __init__(self, status: int, message: str) -> None:
        import requests
        from types import SimpleNamespace

        response = requests.Response()
        response.status_code = status
        self.error = (status, message, response)
        self.api = SimpleNamespace(remove_container=self._remove)

    def _remove(self, container_id: str, **_: object) -> None:
        import docker

        status, message, response = self.error
        raise docker.errors.APIError(message, response=response, explanation=message)


def test_a_container_another_sweep_is_removing_is_not_an_error():
    """Two sweeps of one dead run at once: docker answers the second with 409 "already in
    progress" (measured in tests/plugin/test_concurrent_runs.py); that is "not removed by us"."""
    from pytest_hermes_kernel.containers.lifecycle import remove_container

    busy = _Engine(409, "removal of container abc is already in progress")
    assert remove_container("abc", client=busy) is False  # type: ignore[arg-type]


def test_any_other_refusal_of_the_engine_is_raised():
    import docker

    from pytest_hermes_kernel.containers.lifecycle import remove_container

    with pytest.raises(docker.errors.APIError):
        remove_container("abc", client=_Engine(500, "driver failed"))  # type: ignore[arg-type]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="start times since boot come from /proc")
def test_a_live_member_and_host_stay_alive_when_the_wall_clock_is_stepped(tmp_path, monkeypatch):
    """psutil's create_time() adds the boot time, which moves when the wall clock is stepped (a VM's
    clock corrected): a CI run judged its live members dead and removed their containers mid-test.
    Identities are start times since boot now."""
    import psutil._pslinux as linux

    from pytest_hermes_kernel.containers import labels

    member = SharedResource("docker", "k", run_id="clock", directory=str(tmp_path)).member
    made = labels.run_labels(run_id="clock", worker_id="gw0", role="docker-kernel-host")
    booted = linux.boot_time()
    monkeypatch.setattr(linux, "boot_time", lambda: booted + 1.7)  # the clock stepped 1.7 s

    assert sharing.member_alive(member)
    assert not labels.host_is_gone(made)


def _record_then_fail_writes(tmp_path, monkeypatch, members: list[str]) -> tuple[Recorder, SharedResource]:
    """A run's resource recorded with ``members``, then a disk too full to record a new member."""
    rec = Recorder()
    res = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    rec.acquire(res)
    Path(res.state_path).write_text(json.dumps({"resource": {"container_id": "c1"}, "members": members}))
    res.joined = False

    def full(state: dict) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(res, "_write", full)
    return rec, res


def test_a_member_that_cannot_record_itself_beside_only_dead_members_discards_the_container(tmp_path, monkeypatch):
    """Every member crashed, then the disk filled: the joiner could not record itself and removed
    the state files, but the running container stayed, recorded nowhere (no member, no file: the
    next member of the run started a second one beside it)."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    rec, res = _record_then_fail_writes(tmp_path, monkeypatch, [f"{dead.stdout.strip()}:1.0:deadbeef"])

    with pytest.raises(ContainerStartError, match="No space left on device"):
        rec.acquire(res)

    assert rec.discarded == [{"container_id": "c1"}], "the container nobody holds any more outlived its record"
    assert not os.path.exists(res.state_path) and not os.path.exists(res.lock_path)


def test_a_member_that_cannot_record_itself_beside_a_live_member_leaves_the_container_and_its_record(
        tmp_path, monkeypatch):
    other = f"{os.getpid()}:{start_time(os.getpid())}:0ther"
    rec, res = _record_then_fail_writes(tmp_path, monkeypatch, [other])

    with pytest.raises(ContainerStartError, match="No space left on device"):
        rec.acquire(res)

    assert rec.discarded == [] and rec.started == 1
    assert json.loads(Path(res.state_path).read_text())["members"] == [other]
