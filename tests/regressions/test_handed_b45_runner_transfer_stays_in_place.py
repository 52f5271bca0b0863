"""Handed case B45: file transfers escaped their target through ``..`` entries, absolute names,
symlinks or hard links (the CVE-2007-4559 class, the ``docker cp`` symlink race), or kept
setuid bits.

The kit's own transfer is shipping the runner file into a new kernel dir (local: ``O_EXCL |
O_NOFOLLOW`` in a ``mkdtemp`` dir; docker: a tar through ``put_archive``; ssh: SFTP into a
freshly made dir; filecell: ``O_EXCL`` files in a freshly made dir). Checked here:

* the docker tar holds only a directory or a regular file with a plain relative name and no
  setuid/setgid/sticky bit;
* a kernel id that is not one plain name (``../../x``, ``a/b``, an absolute path) is refused
  before anything is written, on every transport (it names the kernel's dir);
* a cell that replaces the container's kernel root with a symlink does not redirect the next
  kernel's runner (docker, in a container of its own that both kernels share);
* on every transport the runner file lands in the kernel's own dir, as a regular 0600 file.
"""

from __future__ import annotations

import io
import stat
import tarfile
import uuid

import pytest

from pytest_hermes_kernel import ConfigError, KernelHandle, start_kernel
from pytest_hermes_kernel.kernel.contract import Transport

#: A cell that reports the runner file of its own kernel: (is a regular file, mode, dir mode).
RUNNER_FILE = """
import os, stat, sys
path = next(p for p in sys.path if p.endswith('.pyz'))
st, dst = os.lstat(path), os.lstat(os.path.dirname(path))
(stat.S_ISREG(st.st_mode), oct(stat.S_IMODE(st.st_mode)), oct(stat.S_IMODE(dst.st_mode)), st.st_nlink)
"""


def test_the_docker_runner_archive_holds_plain_entries_only() -> None:
    pytest.importorskip("docker")
    from pytest_hermes_kernel.transports.docker.kernel_server import runner_archive

    with tarfile.open(fileobj=io.BytesIO(runner_archive("0" * 32, 1000, 1000))) as tar:
        members = tar.getmembers()
    assert [m.type for m in members] == [tarfile.DIRTYPE, tarfile.DIRTYPE, tarfile.REGTYPE]
    for m in members:
        assert not m.name.startswith("/") and ".." not in m.name.split("/"), m.name
        assert m.mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX) == 0, (m.name, oct(m.mode))
    if not hasattr(tarfile, "data_filter"):  # Debian bookworm's python3 is 3.11.2
        pytest.skip("the rest needs Python's tar data filter (PEP 706, Python 3.11.4 and later); the checks above ran")
    for m in members:
        assert tar_filter_ok(m)


def tar_filter_ok(member: tarfile.TarInfo) -> bool:
    """Python's own ``data`` filter (PEP 706) accepts the member unchanged."""
    return tarfile.data_filter(member, "/nonexistent-dest") is not None


@pytest.mark.parametrize("bad", ["../../escape", "a/b", "/etc/x", "..", ""])
def test_a_kernel_id_that_is_not_a_plain_name_is_refused(hermes_transport: Transport, bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        KernelHandle(hermes_transport, kernel_id=bad)
    assert "kernel id" in str(info.value)


@pytest.mark.hermes_kernel(server=False)  # the spawn path: each kernel gets its own copy
def test_the_runner_file_is_a_private_regular_file_in_the_kernel_dir(hermes_transport: Transport) -> None:
    with start_kernel(hermes_transport) as k:
        r = k.execute(RUNNER_FILE)
    assert r.value == "(True, '0o600', '0o700', 1)", r.summary()


@pytest.mark.hermes_transports("docker", "ssh")
def test_a_forked_kernels_runner_file_is_its_servers_private_file_linked_into_its_dir(hermes_transport: Transport) -> None:
    """On the kernel-server path the kernel dir holds a hard link to the server's runner file
    (re-attach and the probes find it there, as on the spawn path): still a regular 0600 file in a
    0700 dir, with exactly those two names."""
    with start_kernel(hermes_transport) as k:
        r = k.execute(RUNNER_FILE)
    assert r.value == "(True, '0o600', '0o700', 2)", r.summary()


def test_a_symlink_planted_at_the_kernel_root_does_not_redirect_the_runner(docker_ready: None) -> None:
    pytest.importorskip("docker")
    from pytest_hermes_kernel.transports import DockerTransport

    transport = DockerTransport(run_id=f"b45-{uuid.uuid4().hex}")  # a shared container of its own
    try:
        with start_kernel(transport) as planter:
            r = planter.execute("import os\nos.makedirs('/tmp/b45-target', exist_ok=True)\n"
                                "os.rename('/tmp/hermes-kernels', '/tmp/hermes-kernels.moved')\n"
                                "os.symlink('/tmp/b45-target', '/tmp/hermes-kernels')")
            assert r.status == "ok", r.summary()
            with start_kernel(transport) as second:
                assert second.execute("1 + 1").value == "2"
                seen = second.execute("import os\n(os.listdir('/tmp/b45-target'), os.path.islink('/tmp/hermes-kernels'))")
    finally:
        transport.close()
    assert seen.value == "([], False)", seen.summary()
