"""A run's files live in one private directory, made safely, and go when the run ends.

Before: a run's state and lock files and the sshd private key were loose files in the temp dir
(``/tmp/pytest-hermes-kernel-<run id>-...``), five a run, left there when a script ended.
Now they live in ``<tmp>/pytest-hermes-kernel-<uid>/run-<run id>/`` (0700, checked with lstat:
no symlink, our own, closed to others) and the run's last member removes the run dir.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import rundir
from pytest_hermes_kernel.containers.sharing import SharedResource
from pytest_hermes_kernel.errors import ConfigError, UnsafeRunDirError

NOBODY = 65534


def _user_dir(tmp: Path) -> Path:
    return tmp / f"pytest-hermes-kernel-{os.getuid()}"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_run_files_live_in_a_0700_run_dir_inside_a_0700_user_dir(tmp_path: Path) -> None:
    res = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    res.acquire(lambda: {"container_id": "c1"}, lambda r: True, lambda r: None)
    try:
        run = _user_dir(tmp_path) / "run-run1"
        assert Path(res.state_path).parent == run and Path(res.lock_path).parent == run
        assert Path(res.side_file("key")).parent == run
        assert _mode(_user_dir(tmp_path)) == 0o700 and _mode(run) == 0o700
        assert _mode(Path(res.state_path)) == 0o600 and _mode(Path(res.lock_path)) == 0o600
    finally:
        res.release(lambda r: None)
    assert not run.exists() and _user_dir(tmp_path).exists()


def test_a_run_dir_stays_while_another_resource_of_the_run_is_in_use(tmp_path: Path) -> None:
    docker = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    sshd = SharedResource("sshd", "k", run_id="run1", directory=str(tmp_path))
    for res in (docker, sshd):
        res.acquire(lambda: {"container_id": "c"}, lambda r: True, lambda r: None)
    docker.release(lambda r: None)
    assert sorted(p.name for p in Path(sshd.run_dir).iterdir()) == ["sshd-k.json", "sshd-k.lock"]
    sshd.release(lambda r: None)
    assert not Path(sshd.run_dir).exists()


def test_a_member_joins_again_after_the_last_one_removed_the_run_dir(tmp_path: Path) -> None:
    first = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    first.acquire(lambda: {"container_id": "c1"}, lambda r: True, lambda r: None)
    first.release(lambda r: None)
    assert not Path(first.run_dir).exists()
    again = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    assert again.acquire(lambda: {"container_id": "c2"}, lambda r: True, lambda r: None) == {"container_id": "c2"}
    again.release(lambda r: None)


def test_looking_at_a_resource_creates_no_file(tmp_path: Path) -> None:
    res = SharedResource("docker", "k", run_id="run1", directory=str(tmp_path))
    assert res.peek() is None and res.members() == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("which", ["user dir", "run dir"])
def test_a_pre_created_symlink_is_refused(tmp_path: Path, which: str) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = _user_dir(tmp_path) if which == "user dir" else _user_dir(tmp_path) / "run-run1"
    link.parent.mkdir(mode=0o700, exist_ok=True)
    link.symlink_to(target)

    with pytest.raises(UnsafeRunDirError, match="symlink") as info:
        rundir.run_dir("run1", str(tmp_path))

    assert info.value.path == str(link) and isinstance(info.value, PermissionError)
    assert list(target.iterdir()) == [], "nothing is written through the link"


@pytest.mark.skipif(os.getuid() != 0, reason="making a directory another user owns needs root")
@pytest.mark.parametrize("which", ["user dir", "run dir"])
def test_a_dir_another_user_owns_is_refused(tmp_path: Path, which: str) -> None:
    user_dir = _user_dir(tmp_path)
    user_dir.mkdir(mode=0o700)
    foreign = user_dir if which == "user dir" else user_dir / "run-run1"
    foreign.mkdir(mode=0o700, exist_ok=True)
    os.chown(foreign, NOBODY, NOBODY)

    with pytest.raises(UnsafeRunDirError, match=f"owned by uid {NOBODY}"):
        SharedResource("docker", "k", run_id="run1", directory=str(tmp_path)).acquire(
            lambda: {"container_id": "c"}, lambda r: True, lambda r: None)

    assert list(foreign.iterdir()) == [] and os.lstat(foreign).st_uid == NOBODY  # left as it was


def test_a_dir_open_to_others_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    user_dir = _user_dir(tmp_path)
    user_dir.mkdir()
    user_dir.chmod(0o755)

    with pytest.raises(UnsafeRunDirError, match="mode is 0755"):
        rundir.run_dir("run1", str(tmp_path))

    assert _mode(user_dir) == 0o755 and list(user_dir.iterdir()) == []


def test_a_temp_dir_others_can_rename_entries_of_is_refused(tmp_path: Path) -> None:
    tmp = tmp_path / "world-writable"
    tmp.mkdir()
    tmp.chmod(0o777)  # not sticky: anyone could swap our directory for a link

    with pytest.raises(UnsafeRunDirError, match="not sticky"):
        rundir.run_dir("run1", str(tmp))

    tmp.chmod(0o1777)  # like /tmp
    assert _mode(Path(rundir.run_dir("run1", str(tmp)))) == 0o700


@pytest.mark.parametrize("run_id", ["../x", "a/b", ".hidden", "", "x" * 129])
def test_a_run_id_that_cannot_name_a_directory_is_a_config_error(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(ConfigError, match="run id"):
        rundir.run_dir_path(run_id, str(tmp_path))
    if run_id:
        with pytest.raises(ConfigError, match="run id"):
            SharedResource("docker", "k", run_id=run_id, directory=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
