"""``hermes-kernel sweep`` removes the run files of dead runs; ``--dry-run`` only lists them.

Before: the sweep removed containers, kernel dirs and kernel processes but left every run's
state files, lock files and sshd private keys in the temp dir, and it had no dry run. Now a
shared resource's files go once no live process holds it (members judged by pid and start
time, its lock tried, never waited for), the run dir with them; a live run's files stay.

The command runs in a subprocess with its own ``TMPDIR`` and no reachable docker engine, so it
sees only the run dirs made here (and, being a dry run or ``run-files`` only, touches nothing else).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import sweep
from pytest_hermes_kernel.containers.labels import LABEL_STATE_FILE, run_labels
from pytest_hermes_kernel.containers.sharing import SharedResource


def _dead_member() -> str:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return f"{proc.stdout.strip()}:1.0:deadbeef"  # a SIGKILLed worker's entry


def _resource(tmp: Path, run_id: str, kind: str = "sshd", *, alive: bool) -> SharedResource:
    """A run's shared resource with a private key beside it; its only member dead or this process."""
    res = SharedResource(kind, "k", run_id=run_id, directory=str(tmp))
    res.acquire(lambda: {"container_id": f"{run_id}-c"}, lambda r: True, lambda r: None)
    key = Path(res.side_file("key"))
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    key.chmod(0o600)
    if not alive:
        Path(res.state_path).write_text(json.dumps({"resource": {"container_id": "c"}, "members": [_dead_member()]}))
        res.joined = False
    return res


def _files(res: SharedResource) -> list[str]:
    return [res.state_path, res.lock_path, res.side_file("key")]


def _hermes_kernel(tmp: Path, *args: str) -> str:
    env = {**os.environ, "TMPDIR": str(tmp), "DOCKER_HOST": f"unix://{tmp}/no-docker.sock"}
    env.pop("PYTEST_HERMES_KERNEL_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_dry_run_lists_a_dead_runs_files_and_removes_nothing(tmp_path: Path) -> None:
    dead = _resource(tmp_path, "dead-run", alive=False)
    live = _resource(tmp_path, "live-run", alive=True)
    try:
        out = _hermes_kernel(tmp_path, "--dry-run")

        for path in _files(dead):
            assert f"would remove run file {path} " in out
        assert f"would remove run dir {dead.run_dir} " in out
        assert "live-run" not in out, "a live run's files are never listed"
        assert all(os.path.exists(p) for p in _files(dead) + _files(live)), "a dry run removed something"
        assert "sweep (dry run, nothing removed): 4 run files" in out
    finally:
        live.release(lambda r: None)


def test_sweep_removes_a_dead_runs_files_and_never_a_live_runs(tmp_path: Path) -> None:
    dead = _resource(tmp_path, "dead-run", alive=False)
    live = _resource(tmp_path, "live-run", alive=True)
    try:
        out = _hermes_kernel(tmp_path, "run-files")

        assert not os.path.exists(dead.run_dir), "the dead run's dir (and its private key) outlived the sweep"
        assert f"removed run file {dead.side_file('key')} " in out
        assert f"removed run dir {dead.run_dir} " in out, "the dir a dry run lists as a dir is one when removed too"
        assert all(os.path.exists(p) for p in _files(live)), "the sweep removed a live run's files"
        assert out.strip().endswith("sweep: 4 run files")
    finally:
        live.release(lambda r: None)
    assert not os.path.exists(live.run_dir)


def test_a_dead_resource_goes_while_the_rest_of_its_run_is_in_use(tmp_path: Path) -> None:
    """A worker SIGKILLed while holding the run's sshd: its key goes, the run's docker stays."""
    dead = _resource(tmp_path, "run1", "sshd", alive=False)
    live = _resource(tmp_path, "run1", "docker", alive=True)
    try:
        removed = sweep.sweep_dead_run_files(str(tmp_path))

        assert sorted(removed) == sorted(_files(dead))
        assert sorted(os.listdir(live.run_dir)) == sorted(os.path.basename(p) for p in _files(live))
    finally:
        live.release(lambda r: None)


def test_a_resource_whose_lock_is_held_is_left_alone(tmp_path: Path) -> None:
    """A process inside the lock (starting the container) is alive, whatever the member list says."""
    from pytest_hermes_kernel.containers import sharing

    starting = _resource(tmp_path, "run1", alive=False)
    with sharing.locked_file(starting.lock_path, 5.0, make_dir=lambda: None):
        script = (f"from pytest_hermes_kernel.containers import sweep; "
                  f"print(sweep.sweep_dead_run_files({str(tmp_path)!r}))")
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]" and all(os.path.exists(p) for p in _files(starting))
    assert len(sweep.sweep_dead_run_files(str(tmp_path))) == 4  # the lock is free again: it goes


def test_a_removed_sshd_containers_key_goes_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The label sweep removes a container no live member holds, and its run files with it."""
    dead = _resource(tmp_path, "run1", alive=False)
    labels = {**run_labels(run_id="run1", worker_id="gw0", role="sshd"), LABEL_STATE_FILE: dead.state_path}

    class FakeApi:
        def containers(self, all: bool, filters: dict) -> list[dict]:  # noqa: A002 - docker-py's name
            return [{"Id": "sshd-container", "Labels": labels}]

    class FakeClient:
        api = FakeApi()

    removed: list[str] = []
    monkeypatch.setattr(sweep, "remove_container", lambda cid, client: removed.append(cid) or True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the run dirs this user's sweeps look at

    assert sweep.sweep_dead_runs(FakeClient(), dry_run=True) == ["sshd-container"]
    assert removed == [] and all(os.path.exists(p) for p in _files(dead)), "a dry run removed something"
    assert sweep.sweep_dead_runs(FakeClient()) == ["sshd-container"] == removed
    assert not os.path.exists(dead.side_file("key")), "the private key outlived its sshd container"
    assert not os.path.exists(dead.run_dir)


def test_a_label_naming_a_file_outside_our_run_dirs_is_not_touched(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Anyone with docker access can write labels: a state-file label is no proof a path is ours."""
    victim = tmp_path / "important.json"
    victim.write_text("{}")
    (tmp_path / "important.lock").write_text("")
    labels = {**run_labels(run_id="run1", worker_id="gw0", role="sshd"), LABEL_STATE_FILE: str(victim)}

    class FakeApi:
        def containers(self, all: bool, filters: dict) -> list[dict]:  # noqa: A002 - docker-py's name
            return [{"Id": "planted", "Labels": labels}]

    class FakeClient:
        api = FakeApi()

    monkeypatch.setattr(sweep, "remove_container", lambda cid, client: True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    assert sweep.sweep_dead_runs(FakeClient()) == ["planted"]
    assert victim.exists() and (tmp_path / "important.lock").exists()


@pytest.mark.parametrize(("kind", "one", "many"), [("run-files", "1 run file", "2 run files"),
                                                    ("containers", "1 container", "2 containers"),
                                                    ("kernel-processes", "1 kernel process", "2 kernel processes"),
                                                    ("kept", "1 kept", "2 kept")])
def test_the_sweep_summary_says_one_thing_in_the_singular(kind: str, one: str, many: str) -> None:
    from pytest_hermes_kernel.transports.leftovers import count_noun

    assert (f"1 {count_noun(kind, 1)}", f"2 {count_noun(kind, 2)}") == (one, many)
