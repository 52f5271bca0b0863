"""a57a100 renamed a local kernel dir out of the kernel dirs' names before the host's clean-up and
the reaper's sweep removed it, but the leak check's removal of a leaked dir and ``hermes-kernel
sweep kernel-dirs`` still removed it where it was: meanwhile it was there under its own name
without its host file, judged by its name alone by the leak check of a namespaced neighbour of
the same pid (``leaked kernel dir: /tmp/hermes-kernel-1-...``, not its own). Both rename it first."""

from __future__ import annotations

import os
import subprocess
import sys

from pytest_hermes_kernel.leaks import probes
from pytest_hermes_kernel.transports import kernel_dirs, leftovers


def _a_dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def _kernel_dir(root, pid: int) -> str:
    kdir = root / f"{kernel_dirs.KERNEL_DIR_PREFIX}{pid}-left"
    kdir.mkdir(mode=0o700)
    (kdir / kernel_dirs.HOST_FILE).write_text(f"{pid} {kernel_dirs._pid_namespace()}\n{root}\n")
    for name in ("runner.log", "sock", "token"):
        (kdir / name).write_text("x")
    return str(kdir)


def _watched_removal(monkeypatch) -> list[list[str]]:
    """What a neighbour's leak check would judge by name alone, looked at after each file removed."""
    seen: list[list[str]] = []

    def remove_tree_seen(path: str) -> bool:
        root = os.path.dirname(path)
        for name in sorted(os.listdir(path)):  # the host file first, as rmtree may take it
            os.unlink(os.path.join(path, name))
            seen.append([n for n in os.listdir(root) if n.startswith(kernel_dirs.KERNEL_DIR_PREFIX)
                         and not os.path.lexists(os.path.join(root, n, kernel_dirs.HOST_FILE))])
        os.rmdir(path)
        return True

    for module in (kernel_dirs, leftovers, probes):  # whichever removes it
        monkeypatch.setattr(module, "remove_tree", remove_tree_seen, raising=False)
    return seen


def test_a_leaked_kernel_dir_the_leak_check_removes_is_not_seen_half_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    kdir = _kernel_dir(tmp_path, os.getpid())
    seen = _watched_removal(monkeypatch)

    probes._remove_kernel_dir(f"dir:{os.path.basename(kdir)}")

    assert seen and all(names == [] for names in seen), seen
    assert os.listdir(tmp_path) == []


def test_a_dead_hosts_kernel_dir_the_sweep_removes_is_not_seen_half_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(leftovers, "_sweep_filecell_dirs", lambda progress, dry_run: 0)  # (the machine's)
    _kernel_dir(tmp_path, _a_dead_pid())
    seen = _watched_removal(monkeypatch)

    assert leftovers.sweep_kernel_dirs(lambda line: None, dry_run=False) == 1

    assert seen and all(names == [] for names in seen), seen
    assert os.listdir(tmp_path) == []
