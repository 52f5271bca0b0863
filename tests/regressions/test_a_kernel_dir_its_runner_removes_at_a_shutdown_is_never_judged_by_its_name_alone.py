"""After a57a100 a kernel dir was renamed out of the kernel dirs' names before the *host* removed
it, but a kernel's runner removes its own kernel dir first, at every shutdown, with a plain
``rmtree``: while it did, the dir was there under its own name without its host file (seen in
600-1,000 of a watcher's looks during one shutdown of a kernel whose cells left 5,000 files),
so a namespaced neighbour of the same pid (two pid 1s sharing ``/tmp``) still counted it as its
own leak (``leaked kernel dir: /tmp/hermes-kernel-1-...``), and removed it. The runner now renames
it out of those names first too, and back where it could not all go; and a runner the host's
shutdown killed midway through (200,000 files, ``shutdown_grace=0.2``) left ``.removing-<name>``,
which no clean-up, leak check or young sweep looked at: the host's clean-up takes it over."""

from __future__ import annotations

import os
import threading

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.runner.trees import remove_tree
from pytest_hermes_kernel.transports import kernel_dirs, make_transport

MANY_FILES = "for i in range(5000):\n    open(f'f{i}', 'w').close()"


def _judged_by_name_alone(root: str) -> list[str]:
    """Kernel dirs under ``root`` that hold no host file: a leak probe judges them by their name.
    The dir is looked at after its host file: one renamed away between the two looks (a loaded
    run's watcher saw one so, once) had no host file because it was not there at all."""
    out = []
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if (name.startswith(kernel_dirs.KERNEL_DIR_PREFIX) and not name.startswith("hermes-kernel-server-")
                and not os.path.lexists(os.path.join(path, kernel_dirs.HOST_FILE)) and os.path.isdir(path)):
            out.append(name)
    return out


@pytest.mark.parametrize("server", [True, False], ids=["forked", "spawned"])
def test_a_kernel_dir_its_runner_removes_is_never_seen_without_its_host_file(tmp_path, monkeypatch, server):
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.extend(_judged_by_name_alone(str(tmp_path)))

    transport = make_transport("local", server=server)
    try:
        kernel = start_kernel(transport)
        try:
            assert kernel.execute(MANY_FILES).status == "ok"
            watcher = threading.Thread(target=watch)
            watcher.start()
        finally:
            kernel.shutdown()
            done.set()
        watcher.join()
    finally:
        transport.close()

    assert seen == [], f"seen without its host file {len(seen)} times: {sorted(set(seen))}"
    assert [n for n in os.listdir(tmp_path) if not n.startswith("hermes-kernel-server-")] == []


def _left_by_a_runner_killed_removing_it(root) -> str:
    """A kernel dir of this process as its runner left it when the host's shutdown killed it midway
    through removing it (a big dir: 200,000 files and ``shutdown_grace=0.2`` did it): renamed away."""
    kdir = kernel_dirs.new_kernel_dir()
    os.mkdir(os.path.join(kdir, "left"))
    os.rename(kdir, os.path.join(str(root), kernel_dirs.REMOVING_PREFIX + os.path.basename(kdir)))
    return kdir


def test_a_kernel_dir_its_runner_was_killed_removing_is_removed_by_the_host(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    kdir = _left_by_a_runner_killed_removing_it(tmp_path)

    assert kernel_dirs.remove_kernel_dir(kdir)  # the host's clean-up after the kill
    assert os.listdir(tmp_path) == []


def test_a_kernel_dir_its_runner_was_killed_removing_is_a_leak_where_the_host_cannot_remove_it(tmp_path, monkeypatch):
    from pytest_hermes_kernel.leaks import probes

    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    kdir = _left_by_a_runner_killed_removing_it(tmp_path)
    monkeypatch.setattr(kernel_dirs, "remove_tree", lambda path: False)

    try:
        assert kernel_dirs.remove_kernel_dir(kdir) is False
        assert probes.kernel_dirs() == {f"dir:{os.path.basename(kdir)}": kdir}, "seen, and reported, as itself"
    finally:
        remove_tree(kdir)
        remove_tree(os.path.join(str(tmp_path), kernel_dirs.REMOVING_PREFIX + os.path.basename(kdir)))

