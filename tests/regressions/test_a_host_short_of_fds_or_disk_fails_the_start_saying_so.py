"""Found by a breaker helper (resource exhaustion, 2026-12-05): a local kernel started while the
test process had run out of file descriptors (a test that starts kernels by the dozen under
``ulimit -n 64``), or while the kernel dir root was full, raised a bare ``OSError: [Errno 24] Too
many open files`` (or ``[Errno 28] No space left on device``, naming ``.../runner.host``) out of
``socket.socketpair``, ``open`` or the kernel server's start, and left its kernel dir behind: the
leak check then errored the test with ``leaked kernel dir: /tmp/hermes-kernel-...`` (with 0 to 3
fds free, 3 of 16 starts on the kernel-server path and 4 on the spawn path each left one; the
spawn path's ``KernelStartError`` said "check the interpreter path"). ``shutdown()`` with no fd
free raised a bare ``OSError`` from the pidfd's ``dup``. Now a start raises ``KernelStartError``
whose hint names what ran out (``ulimit -n`` and its value, the full file system), nothing is
left, and a shutdown with no fd free ends the kernel as asked.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.local_server import SERVER_DIR_PREFIX
from tests.support import fds_left

SERVER = pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])


@SERVER
def test_a_start_with_few_fds_left_says_so_and_leaves_no_kernel_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     server: bool) -> None:
    root = tmp_path / "kernels"
    root.mkdir()
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(root))
    transport = make_transport("local", server=server)
    seen: list[str] = []
    try:
        start_kernel(transport).shutdown()  # the kernel server runs already, as in a test after the first
        for free in range(10):
            kernel = None
            with fds_left(free):
                try:
                    kernel = start_kernel(transport)
                except KernelStartError as exc:
                    seen.append(str(exc))
            if kernel is not None:
                assert kernel.execute("1 + 1").value == "2"
                kernel.shutdown()
            # the failed start's kernel dir stayed. A kernel server's dir is no kernel's: the lowered
            # limit is inherited state, which gets a server of its own where one can start (when an fd of
            # another thread's came free meanwhile: a loaded clean-clone run), alive until the close below
            kernel_dirs = [name for name in os.listdir(root) if not name.startswith(SERVER_DIR_PREFIX)]
            assert kernel_dirs == [], (free, os.listdir(root))
            assert len(os.listdir(root)) - len(kernel_dirs) == len(transport.server_pids()), (free, os.listdir(root))
    finally:
        transport.close()
    assert len(seen) >= 3, seen  # 0, 1 and 2 fds are too few for any start
    for text in seen:
        assert "Too many open files" in text and "run out of file descriptors (its limit, ulimit -n, is " in text, text
        assert "interpreter path" not in text, text


@SERVER
def test_a_shutdown_with_no_fd_left_ends_the_kernel(server: bool) -> None:
    transport = make_transport("local", server=server)
    try:
        kernel = start_kernel(transport)
        pid = kernel.info().pid
        with fds_left(0):
            info = kernel.shutdown()  # a bare OSError from the pidfd's dup
        assert (info.step, info.confirmed) == ("request", True), info
        assert not os.path.exists(f"/proc/{pid}") or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    finally:
        transport.close()


@contextlib.contextmanager
def _tiny_tmpfs(root: Path, options: str, fill: Callable[[int], None], count: int) -> Iterator[Path]:
    """``root`` as a tmpfs mounted with ``options`` and filled by ``fill(i)`` for ``i < count``
    until the file system refuses (root only: it is mounted); unmounted after."""
    root.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(root)],
                                           capture_output=True).returncode:
        pytest.skip("needs root to mount a tiny tmpfs")
    try:
        with contextlib.suppress(OSError):
            for i in range(count):
                fill(i)
        yield root
    finally:
        subprocess.run(["umount", str(root)], check=True)


@pytest.fixture
def full_root(tmp_path: Path) -> Iterator[Path]:
    """A tiny tmpfs, filled up."""
    root = tmp_path / "tiny"
    with _tiny_tmpfs(root, "size=64k", lambda i: (root / f"fill{i}").write_bytes(b"x" * 4096), 1000) as full:
        yield full


@SERVER
def test_a_start_on_a_full_kernel_dir_root_says_so_and_leaves_no_kernel_dir(full_root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                           server: bool) -> None:
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(full_root))
    transport = make_transport("local", server=server)
    try:
        with pytest.raises(KernelStartError) as info:  # a bare OSError naming .../runner.host
            start_kernel(transport).shutdown()
    finally:
        transport.close()
    text = str(info.value)
    assert "No space left on device" in text and f"the file system of {full_root} is full" in text, text
    assert [n for n in os.listdir(full_root) if not n.startswith("fill")] == [], os.listdir(full_root)


@pytest.mark.parametrize("transport_name", ["docker", "ssh"])
def test_a_run_whose_temp_dir_is_full_gets_a_clear_error_and_leaves_no_run_file(full_root: Path,
                                                                                monkeypatch: pytest.MonkeyPatch,
                                                                                transport_name: str) -> None:
    """The run's shared container could not be recorded (docker: its state; ssh: the sshd key
    first): a bare ``OSError: [Errno 28] No space left on device`` naming no file, and the sshd's
    private key, a lock and a temp file stayed in the run dir after the run."""
    import docker

    from pytest_hermes_kernel.containers.labels import LABEL_STATE_FILE
    from pytest_hermes_kernel.errors import ContainerStartError

    monkeypatch.setattr(tempfile, "tempdir", str(full_root))  # $TMPDIR, without gettempdir's fallback to /tmp
    transport = make_transport(transport_name)
    try:
        with pytest.raises(ContainerStartError) as info:
            start_kernel(transport).shutdown()
    finally:
        transport.close()
    text = str(info.value)
    assert "No space left on device" in text and "Hint: the file system of the temp dir is full" in text, text
    assert str(full_root) in text, text  # the file it could not write
    left = [str(p.relative_to(full_root)) for p in full_root.rglob("*") if not p.name.startswith("fill")]
    assert not [p for p in left if "/run-" in p], left  # the key, the lock, a .tmp
    client = docker.from_env()
    try:
        # (the list's summaries, not containers.list(): it inspects each one listed, and raised NotFound
        # for one another run, on this shared engine, removed in between)
        mine = client.api.containers(all=True, filters={"label": LABEL_STATE_FILE})
        assert not [c["Names"] for c in mine if (c.get("Labels") or {}).get(LABEL_STATE_FILE, "").startswith(str(full_root))]
    finally:
        client.close()


def test_a_docker_start_with_no_fd_left_does_not_blame_the_engine() -> None:
    """It said "the docker engine ... did not answer: cannot connect to /var/run/docker.sock: Too
    many open files. Hint: is dockerd running there, and may this user use its socket?"."""
    transport = make_transport("docker")
    try:
        start_kernel(transport).shutdown()  # the run's container is up
        with fds_left(0):
            try:
                start_kernel(transport).shutdown()
            except KernelStartError as exc:
                text = str(exc)
            else:
                pytest.fail("a kernel started with no fd left")
    finally:
        transport.close()
    assert "Too many open files" in text and "run out of file descriptors (ulimit -n " in text, text
    assert "is dockerd running" not in text, text


def test_a_kept_kernels_record_on_a_full_disk_names_the_file_and_leaves_no_temp(full_root: Path) -> None:
    """``--hermes-keep-failed`` on a full temp dir: the summary said "kernel ... could not be kept,
    so it was shut down: [Errno 28] No space left on device", naming no file, and the record's
    temp file stayed in the kept dir until the record was removed."""
    from pytest_hermes_kernel.containers.kept import KeptKernel, save
    from pytest_hermes_kernel.containers.rundir import kept_dir

    record = KeptKernel(kernel_id="k" * 32, transport="local", locator={"pid": 1}, token="t" * 32, nodeid="t.py::t",
                        kept_at=0.0, detached_at=0.0, ttl_s=60.0, host_pid=os.getpid())
    where = kept_dir(str(full_root))
    with pytest.raises(OSError) as info:
        save(record, str(full_root))
    assert "No space left on device" in str(info.value) and where in str(info.value), info.value
    assert os.listdir(where) == [], os.listdir(where)


@pytest.fixture
def root_with_no_inode_left(tmp_path: Path) -> Iterator[Path]:
    """A tiny tmpfs whose inodes are all used: a new dir there fails with ``ENOSPC``, as a new
    dir does on a full ext4 (a tmpfs dir takes no block: the fixture above leaves mkdir working)."""
    root = tmp_path / "noinodes"
    with _tiny_tmpfs(root, "size=64k,nr_inodes=8", lambda i: (root / f"fill{i}").touch(), 100) as full:
        yield full


@SERVER
def test_a_start_where_no_kernel_dir_can_be_made_for_want_of_space_says_it_is_full(
        root_with_no_inode_left: Path, monkeypatch: pytest.MonkeyPatch, server: bool) -> None:
    """Its hint said "make it, or point PYTEST_HERMES_KERNEL_DIR at a writable directory" (the
    root exists and is writable: it is full), where the README promises it names the full file system."""
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(root_with_no_inode_left))
    transport = make_transport("local", server=server)
    try:
        with pytest.raises(KernelStartError) as info:
            start_kernel(transport).shutdown()
    finally:
        transport.close()
    text = str(info.value)
    assert "No space left on device" in text and f"the file system of {root_with_no_inode_left} is full" in text, text
    assert "make it" not in text, text


@pytest.mark.parametrize("transport_name", ["docker", "ssh"])
def test_a_run_whose_temp_dir_has_no_room_for_its_run_dir_gets_a_clear_error(root_with_no_inode_left: Path,
                                                                              monkeypatch: pytest.MonkeyPatch,
                                                                              transport_name: str) -> None:
    """Where not even the run's dir (or its lock) can be made, the round's fix (the state file's
    write) was never reached: docker said "the engine at unix:///var/run/docker.sock failed while
    the kernel's container was chosen: OSError: [Errno 28] ... Hint: is dockerd running there and
    answering?", ssh raised a bare ``OSError`` (both from the image build's lock dir, first)."""
    from pytest_hermes_kernel.errors import HermesKernelError

    monkeypatch.setattr(tempfile, "tempdir", str(root_with_no_inode_left))
    transport = make_transport(transport_name)
    try:
        with pytest.raises(HermesKernelError) as info:
            start_kernel(transport).shutdown()
    finally:
        transport.close()
    text = str(info.value)
    assert "No space left on device" in text and "Hint: the file system of the temp dir is full" in text, text
    assert str(root_with_no_inode_left) in text and "dockerd" not in text, text
