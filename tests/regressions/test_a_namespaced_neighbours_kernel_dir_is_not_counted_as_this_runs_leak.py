"""Seen twice on 2026-12-06, in local runs at ``-n 2`` (once beside helpers, once alone): the
namespaced test ``test_a_sweep_leaves_a_filecell_runner_of_another_pid_namespace_alone`` failed
on its inner run's leak check with ``leaked kernel dir: /tmp/hermes-kernel-1-_wv6h1yt``, a
neighbour's. Every namespaced inner run is pid 1 of a pid namespace of its own and they share
``/tmp``; local kernel dirs are named ``hermes-kernel-<host pid>-*``, and a dir whose host file
(``runner.host``, naming the host's pid namespace) could not be read was judged by the name
alone: the neighbour's dir was caught as it was made (before its host file was written) or as
it was removed (its host file gone first), by the host or by the kernel's own runner at its end
(``test_a_kernel_dir_its_runner_removes_at_a_shutdown_is_never_judged_by_its_name_alone.py``). A kernel dir is now made under a name no probe reads and renamed once its host file is in,
and renamed out of the kernel dirs' names before it is removed (back, where it could not all go).
"""

from __future__ import annotations

import os

from pytest_hermes_kernel.leaks import probes
from pytest_hermes_kernel.transports import kernel_dirs, local  # noqa: F401 - the probe looks once local kernels can be made


def _neighbours_dir(root) -> str:
    """A kernel dir of another pid namespace's host that has this process's pid (as two pid 1s have)."""
    kdir = root / f"{kernel_dirs.KERNEL_DIR_PREFIX}{os.getpid()}-neighbour"
    kdir.mkdir(mode=0o700)
    (kdir / kernel_dirs.HOST_FILE).write_text(f"{os.getpid()} pid:[1]\n{root}\n")
    (kdir / "runner.log").write_text("the neighbour's kernel\n")
    return str(kdir)


def test_a_neighbours_kernel_dir_is_not_seen_half_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    kdir = _neighbours_dir(tmp_path)
    assert probes.kernel_dirs() == {}  # its host file says: not this process's
    seen_midway = []
    real_remove_tree = kernel_dirs.remove_tree

    def remove_tree_seen(path: str) -> bool:  # the host file goes first, as rmtree may take it
        for name in sorted(os.listdir(path)):
            os.unlink(os.path.join(path, name))
            seen_midway.append(probes.kernel_dirs())
        return real_remove_tree(path)

    monkeypatch.setattr(kernel_dirs, "remove_tree", remove_tree_seen)
    assert kernel_dirs.remove_kernel_dir(kdir)

    assert seen_midway and all(seen == {} for seen in seen_midway), seen_midway
    assert not os.path.lexists(kdir) and os.listdir(tmp_path) == []


def test_a_kernel_dir_is_not_there_under_its_name_before_its_host_file(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    seen_while_written = []
    real = kernel_dirs._pid_namespace

    def namespace_seen() -> str:  # called as the host file is written
        seen_while_written.append([n for n in os.listdir(tmp_path) if n.startswith(kernel_dirs.KERNEL_DIR_PREFIX)])
        return real()

    monkeypatch.setattr(kernel_dirs, "_pid_namespace", namespace_seen)
    kdir = kernel_dirs.new_kernel_dir()
    try:
        assert seen_while_written == [[]], seen_while_written
        assert os.path.basename(kdir).startswith(f"{kernel_dirs.KERNEL_DIR_PREFIX}{os.getpid()}-")
        assert kernel_dirs._host_namespace(kdir) == real()  # the dir as named holds its host file
    finally:
        kernel_dirs.remove_kernel_dir(kdir)
    assert os.listdir(tmp_path) == []


def test_a_kernel_dir_that_cannot_all_be_removed_stays_under_its_own_name(tmp_path, monkeypatch):
    """Renamed back, so the leak check and the sweep still see (and report) what is left."""
    kdir = _neighbours_dir(tmp_path)
    monkeypatch.setattr(kernel_dirs, "remove_tree", lambda path: False)

    assert kernel_dirs.remove_kernel_dir(kdir) is False
    assert os.listdir(tmp_path) == [os.path.basename(kdir)]



def test_a_neighbours_kernel_dir_renamed_away_during_the_look_is_not_counted(tmp_path, monkeypatch):
    """Listed under its own name, renamed away (its removal began) before its host file was read:
    the unread file left the name alone to judge it, and a neighbour of the same pid saw a leak
    of its own that was never there (a loaded run's watcher caught such a look once)."""
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    kdir = _neighbours_dir(tmp_path)
    going = os.path.join(str(tmp_path), kernel_dirs.REMOVING_PREFIX + os.path.basename(kdir))
    real_ours = kernel_dirs.made_in_this_pid_namespace

    def renamed_first(path: str) -> bool:
        if path == kdir and os.path.isdir(kdir):
            os.rename(kdir, going)  # between the listing and the read of its host file
        return real_ours(path)

    monkeypatch.setattr(kernel_dirs, "made_in_this_pid_namespace", renamed_first)

    assert probes.kernel_dirs() == {}
