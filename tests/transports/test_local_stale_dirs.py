"""The stale-dir sweep of local kernel dirs (``sweep_stale_kernel_dirs``: the registry's reaper
and ``hermes-kernel sweep kernel-dirs``): only dirs whose host is dead, judged in the pid
namespace their host was in.

A sweep run in another pid namespace that shares the temp dir (a container, ``unshare --pid``)
sees every host of this one as dead; it once removed a parallel run's live kernel dirs, one a
runner was starting from (the runner died with exit code 2: its file was gone).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.transports.kernel_dirs import HOST_FILE, KERNEL_DIR_PREFIX, new_kernel_dir, sweep_stale_kernel_dirs

WEEK_S = 7 * 86400.0


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _dir_of(root: Path, pid: int, host_file: str | None) -> Path:
    path = root / f"{KERNEL_DIR_PREFIX}{pid}-x1"
    path.mkdir(mode=0o700)
    if host_file is not None:
        (path / HOST_FILE).write_text(host_file)
    return path


def test_a_new_kernel_dir_names_its_host_the_hosts_pid_namespace_and_temp_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(tmp_path))
    kdir = new_kernel_dir()
    assert Path(kdir, HOST_FILE).read_text() == f"{os.getpid()} {os.readlink('/proc/self/ns/pid')}\n{tempfile.gettempdir()}\n"
    shutil.rmtree(kdir)  # a kernel dir of this process: the leak check looks under this root too


def test_a_dead_hosts_dir_goes_unless_its_host_lived_in_another_live_pid_namespace(tmp_path):
    """A dir whose host lived in another pid namespace stays while that namespace lives (its pid
    says nothing here), and goes once the namespace has ended (pid 1 of a killed namespaced run
    is always alive here: its dirs stayed a week, kf's review; ``pid:[1]`` is no live namespace)."""
    probe = ["unshare", "-Urpf", "--mount-proc"]
    if shutil.which("unshare") is None or subprocess.run([*probe, "true"], capture_output=True).returncode != 0:
        pytest.skip("needs unshare -Urpf --mount-proc")
    namespace = subprocess.Popen([*probe, "--kill-child", "sleep", "120"])  # (its pid 1 ends with it)
    inside = None
    try:
        inside = _child_of(namespace.pid)
        live_ns = os.readlink(f"/proc/{inside}/ns/pid")
        assert live_ns != os.readlink("/proc/self/ns/pid")
        dead = _dead_pid()
        ours = _dir_of(tmp_path, dead, f"{dead} {os.readlink('/proc/self/ns/pid')}\n")
        older_kit = _dir_of(tmp_path, dead + 100000, None)  # no host file: the pid alone decides
        elsewhere = _dir_of(tmp_path, dead + 200000, f"{dead} {live_ns}\n")
        ended = _dir_of(tmp_path, dead + 300000, f"{dead} pid:[1]\n")

        assert sweep_stale_kernel_dirs(WEEK_S, root=str(tmp_path)) == 3
        assert not ours.exists() and not older_kit.exists() and not ended.exists() and elsewhere.exists()
    finally:
        namespace.kill()
        namespace.wait()
        if inside is not None:
            _gone(inside)


def _gone(pid: int) -> None:
    deadline = time.monotonic() + 10.0
    while os.path.exists(f"/proc/{pid}") and _state(pid) != "Z":
        assert time.monotonic() < deadline, f"the namespace's pid 1 ({pid}) outlived unshare"
        time.sleep(0.01)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _child_of(pid: int) -> int:
    """The first child of ``pid`` (unshare's forked child: the namespace's pid 1), waited for up to 10 s."""
    import psutil

    deadline = time.monotonic() + 10.0
    while not (children := psutil.Process(pid).children()):
        assert time.monotonic() < deadline, "unshare never forked its child"
        time.sleep(0.01)
    return children[0].pid


def test_a_sweep_inside_another_pid_namespace_leaves_a_live_hosts_dirs(monkeypatch, tmp_path):
    probe = ["unshare", "-Urpf", "--mount-proc", "true"]
    if shutil.which("unshare") is None or subprocess.run(probe, capture_output=True).returncode != 0:
        pytest.skip("needs unshare -Urpf --mount-proc")
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(tmp_path))
    live = Path(new_kernel_dir())
    sweep = ("from pytest_hermes_kernel.transports.kernel_dirs import sweep_stale_kernel_dirs; "
             f"print(sweep_stale_kernel_dirs({WEEK_S}, root={str(tmp_path)!r}))")
    out = subprocess.run([*probe[:3], sys.executable, "-c", sweep], capture_output=True, text=True, timeout=60)

    assert out.returncode == 0 and out.stdout.strip() == "0", out.stdout + out.stderr
    assert live.exists(), "a sweep in another pid namespace removed a live host's kernel dir"
    shutil.rmtree(live)  # a kernel dir of this process: the leak check looks under this root too

