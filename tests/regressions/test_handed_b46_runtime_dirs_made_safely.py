"""Handed case B46: predictable runtime directories under /tmp let another local user pre-create
or redirect them (CVE-2025-71176, pytest's ``/tmp/pytest-of-<user>``).

Where the kit keeps a kernel's files, a name another user can know in advance is either never
used (local kernel dirs: ``mkdtemp``, random, 0700) or checked without following a symlink and
refused, never fixed up: the run directory (``tests/unit/test_rundir.py`` covers its symlink,
foreign-owner, 0777 and renamable-parent cases), filecell's ``root`` (default
``/tmp/hermes-filecell-<uid>``) and the ssh host's ``~/.hermes-kernels``. Each is pre-created here as
(a) a symlink to a directory another uid owns, (b) a 0777 directory and (c) a directory of
another uid; the start must fail naming the path and the problem, and nothing may be written
through the symlink.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import FileCellTransport, LocalShellBackend, LocalTransport

OTHER_UID = 65534  # nobody


def pre_create(path: Path, how: str) -> Path | None:
    """Make ``path`` the way another user could have; returns the symlink's target, if any."""
    if how == "symlink":
        target = path.parent / "elsewhere"
        target.mkdir(mode=0o755)
        os.chown(target, OTHER_UID, OTHER_UID)
        path.symlink_to(target)
        return target
    path.mkdir()
    if how == "0777":
        path.chmod(0o777)
    else:
        path.chmod(0o700)
        os.chown(path, OTHER_UID, OTHER_UID)
    return None


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh directory with a short path (a filecell root must fit unix socket paths)."""
    if os.getuid() != 0:
        pytest.skip("making a directory another uid owns needs root")
    path = Path(tempfile.mkdtemp(prefix="b46-"))
    yield path
    shutil.rmtree(path)


@pytest.mark.parametrize("how", ["symlink", "0777", "other_uid"])
def test_a_pre_created_filecell_root_is_refused(short_tmp: Path, how: str) -> None:
    root = short_tmp / "hermes-filecell"
    target = pre_create(root, how)
    before = stat.S_IMODE(os.lstat(root).st_mode)

    with pytest.raises(KernelStartError) as info:
        start_kernel(FileCellTransport(LocalShellBackend(), root=str(root)), start_timeout=30)

    text = str(info.value)
    assert str(root) in text and ("owned by" in text or "open to group or others" in text), text
    assert target is None or list(target.iterdir()) == []  # nothing written through the symlink
    assert stat.S_IMODE(os.lstat(root).st_mode) == before  # nothing chmodded to fit


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_local_kernel_dirs_are_fresh_private_and_unpredictable(tmp_path: Path, monkeypatch, server: bool) -> None:
    """The kernel dirs, and on the server path the kernel server's dir (its runner file, its
    log): a server dir of a name known in advance, made with ``exist_ok``, passed when only the
    kernel dirs were looked at."""
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(tmp_path))
    transport = LocalTransport(server=server)
    try:
        with start_kernel(transport) as a, start_kernel(transport) as b:
            dirs = [Path(k.launched.kernel_dir) for k in (a, b)]
            made = sorted(tmp_path.iterdir())  # every dir the kit made there: kernel dirs, a server's
            for d in made:
                st = os.lstat(d)
                assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700, d
                assert len(d.name.rsplit("-", 1)[1]) >= 8, d  # mkdtemp's random part: no name to pre-create
    finally:
        transport.close()
    prefix = f"hermes-kernel-{os.getpid()}-"
    suffixes = [d.name[len(prefix):] for d in dirs]
    assert all(d.name.startswith(prefix) for d in dirs) and len(set(suffixes)) == 2
    servers = [d for d in made if d.name.startswith(f"hermes-kernel-server-{os.getpid()}-")]
    assert len(servers) == (1 if server else 0) and set(dirs) <= set(made), made


@pytest.fixture(scope="module", params=[True, False], ids=["server", "spawn"])
def fresh_ssh(request: pytest.FixtureRequest, docker_ready: None):
    pytest.importorskip("paramiko")
    from pytest_hermes_kernel.transports import SshTransport

    transport = SshTransport(container="fresh", server=request.param)
    yield transport
    transport.close()


@pytest.mark.parametrize("how", ["symlink", "0777", "other_uid"])
def test_a_tampered_ssh_kernel_root_is_refused(fresh_ssh, how: str) -> None:
    """``~/.hermes-kernels`` on the ssh host, after a first start: (a) a symlink, (b) 0777, (c) a
    0700 dir of another uid (closed to group and others: only its owner tells it apart), made as
    root in the sshd container (the login user cannot ``chown``). The start refuses each, naming it."""
    from tests.support import container_output

    start_kernel(fresh_ssh).shutdown()  # the root exists now, 0700
    root = "/home/hermes/.hermes-kernels"
    tamper = {"symlink": f"rm -rf {root} && ln -s /tmp {root}", "0777": f"rm -rf {root} && mkdir -m 777 {root}",
              "other_uid": f"rm -rf {root} && mkdir -m 700 {root} && chown {OTHER_UID}:{OTHER_UID} {root} && echo done"}[how]
    conn = fresh_ssh._connection()
    if how == "other_uid":
        said = container_output(fresh_ssh.sshd.docker, fresh_ssh.sshd_container_id, ["sh", "-c", tamper])
        assert said.strip() == "done", said
    else:
        assert conn.run(tamper, timeout=10)[0] == 0
    try:
        with pytest.raises(KernelStartError) as info:
            start_kernel(fresh_ssh, start_timeout=30)
        problem = {"symlink": "it is a symlink", "0777": "its mode is 0777, not 0700",
                   "other_uid": f"it is owned by uid {OTHER_UID}, not "}[how]
        assert f"{root} on the ssh host: {problem}" in str(info.value), str(info.value)
        assert "is the host up" not in str(info.value)  # not a connection problem
        code, out, _ = conn.run("ls -A /tmp | grep -c '^[0-9a-f]\\{32\\}$' || true", timeout=10)
        assert out.strip() == b"0"  # no kernel dir made through the symlink
        if how == "other_uid":  # nothing made in it, nothing changed to fit
            assert container_output(fresh_ssh.sshd.docker, fresh_ssh.sshd_container_id,
                                    ["stat", "-c", "%u %a %h", root]).split() == [str(OTHER_UID), "700", "2"]
    finally:
        container_output(fresh_ssh.sshd.docker, fresh_ssh.sshd_container_id, ["rm", "-rf", root])
