"""Handed case B45 (issue 12 point 6): ``KernelHandle.upload`` / ``download`` never write outside
their target: not through ``..`` or absolute names (a hand-made docker tar, an SFTP server's
listing), not through a symlink planted in the kernel's filesystem, not as a link or device;
setuid bits are stripped and sizes are bounded (typed errors naming the entry, nothing left).

The scenario runs on every transport: filecell's transfers (the same kernel-side walker, shipped
to its backend) ran none of the escape scenarios before; round trips run on every transport too.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.errors import FileTransferError, TransferTooLargeError, UnsafePathError
from pytest_hermes_kernel.kernel.transfer import download

#: A cell that builds the scenario's ``out/``: a symlink to /etc, a hard link (to /etc/hostname
#: where the kernel may make one, else to a file outside out/), a FIFO, a 4777 file, a plain file.
BUILD_OUT = """
import os
os.makedirs('out/sub')
os.symlink('/etc', 'out/link')
open('outside.txt', 'w').write('not for the host')
try:
    os.link('/etc/hostname', 'out/hostname')
except OSError:  # another filesystem (docker bind-mounts it) or protected_hardlinks
    os.link('outside.txt', 'out/hostname')
os.mkfifo('out/fifo')
open('out/suid', 'w').write('x')
os.chmod('out/suid', 0o4777)
open('out/sub/plain.txt', 'w').write('plain')
"""

scenario = pytest.mark.hermes_transports("local", "docker", "ssh", "filecell")


def tree(root: Path) -> dict[str, str]:
    """``{relative path: kind}`` of everything under ``root`` (links not followed)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            found[str(path.relative_to(root))] = ("symlink" if path.is_symlink() else "dir" if path.is_dir()
                                                  else "file" if path.is_file() else "other")
    return found


def ok(k: KernelHandle, code: str) -> str | None:
    r = k.execute(code)
    assert r.status == "ok", r.summary()
    return r.value


@scenario
def test_a_download_copies_files_and_rejects_links_fifos_and_setuid_bits(hermes_kernel: KernelHandle,
                                                                          tmp_path: Path) -> None:
    ok(hermes_kernel, BUILD_OUT)
    report = hermes_kernel.download("out", tmp_path / "dl")

    assert tree(tmp_path) == {"dl": "dir", "dl/sub": "dir", "dl/sub/plain.txt": "file", "dl/suid": "file"}
    assert (tmp_path / "dl/sub/plain.txt").read_text() == "plain"
    assert stat.S_IMODE((tmp_path / "dl/suid").stat().st_mode) == 0o755  # 4777 less setuid and g/o write
    assert {r.path: r.reason.split(":")[0] for r in report.rejected} == {
        "out/link": "a symlink", "out/hostname": "a hard link (2 names)", "out/fifo": "a FIFO"}
    assert report.stripped == ("out/suid",) and (report.files, report.dirs, report.bytes) == (2, 2, 6)


@scenario
def test_an_upload_never_follows_a_symlink_planted_by_a_cell(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    ok(hermes_kernel, "import os, tempfile\nos.makedirs('work')\nroot = tempfile.mkdtemp(prefix='b45-root-')\n"
                      "os.symlink(root, 'work/target')")
    local = tmp_path / "x"
    local.write_text("payload")
    with pytest.raises(UnsafePathError) as info:
        hermes_kernel.upload(local, "work/target/x")
    assert info.value.path == "work/target" and "symlink" in str(info.value)
    with pytest.raises(UnsafePathError) as info:
        hermes_kernel.upload(local, "work/target")  # the link itself is not replaced either
    assert info.value.path == "work/target"
    assert ok(hermes_kernel, "import os\nseen = (os.listdir(root), os.path.islink('work/target'))\n"
                             "os.rmdir(root)\nseen") == "([], True)"


@scenario
def test_a_download_through_a_planted_symlink_is_refused(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    ok(hermes_kernel, "import os\nos.symlink('/etc', 'etc')")
    for path in ("etc", "etc/passwd"):
        with pytest.raises(UnsafePathError) as info:
            hermes_kernel.download(path, tmp_path / "dl")
        assert info.value.path == "etc"
    assert tree(tmp_path) == {}


@pytest.mark.parametrize("bad", ["../escape", "/etc/passwd", "a/../../b", "", "a//b", ".",
                                 "\ud800.txt"])  # a lone surrogate that stands for no byte: no file can have it
def test_kernel_paths_outside_the_working_dir_are_refused(hermes_kernel: KernelHandle, tmp_path: Path,
                                                          bad: str) -> None:
    with pytest.raises(UnsafePathError) as info:
        hermes_kernel.download(bad, tmp_path / "dl")
    assert info.value.path == bad
    (tmp_path / "f").write_text("x")
    with pytest.raises(UnsafePathError):
        hermes_kernel.upload(tmp_path / "f", bad)
    assert tree(tmp_path) == {"f": "file"}


def test_a_name_that_is_not_utf8_is_copied_or_refused_by_name(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    """A file name's undecodable byte is copied where the transport can carry it; the ssh
    transport's SFTP cannot (paramiko decodes names as UTF-8): it refuses with a
    FileTransferError and copies nothing (it raised a bare UnicodeDecodeError / UnicodeEncodeError)."""
    hermes_kernel.execute("import os\nos.mkdir('d')\nopen(b'd/' + bytes([255]) + b'.txt', 'w').write('x')")
    (tmp_path / "f").write_text("x")
    outcomes: list[Any] = []
    for move in (lambda: hermes_kernel.download("d", tmp_path / "dl"),
                 lambda: hermes_kernel.upload(tmp_path / "f", "\udcff.txt")):
        try:
            outcomes.append(move())
        except FileTransferError as exc:
            outcomes.append(exc)
    if hermes_kernel.transport.name == "ssh":
        assert all(isinstance(o, FileTransferError) and "not UTF-8" in str(o) for o in outcomes), outcomes
        assert tree(tmp_path) == {"f": "file"}
    else:
        assert outcomes[0].files == 1 and os.listdir(os.fsencode(tmp_path / "dl")) == [b"\xff.txt"], outcomes
        assert hermes_kernel.execute("os.path.exists(b'\\xff.txt')").value == "True"


def test_a_file_and_a_tree_round_trip(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "deep/er").mkdir(parents=True)
    (src / "a.txt").write_text("é unicode\n")
    (src / "deep/er/blob.bin").write_bytes(bytes(range(256)) * 600)  # 150 KiB: several filecell chunks
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o750)
    (src / "empty").mkdir()

    up = hermes_kernel.upload(src, "data/src")
    assert (up.files, up.dirs, up.bytes, up.rejected) == (3, 4, 11 + 153600 + 10, ())
    assert ok(hermes_kernel, "import os\nlen(open('data/src/deep/er/blob.bin', 'rb').read()), "
                             "oct(os.stat('data/src/run.sh').st_mode & 0o777)") == "(153600, '0o750')"
    down = hermes_kernel.download("data/src", tmp_path / "back")
    assert tree(tmp_path / "back") == tree(src) and down.bytes == up.bytes
    for name in ("a.txt", "deep/er/blob.bin", "run.sh"):
        assert (tmp_path / "back" / name).read_bytes() == (src / name).read_bytes()
    assert stat.S_IMODE((tmp_path / "back/run.sh").stat().st_mode) == 0o750

    hermes_kernel.upload(src / "a.txt", "one.txt")
    hermes_kernel.upload(src / "run.sh", "one.txt")  # a file replaces a file
    report = hermes_kernel.download("one.txt", tmp_path / "one.txt")
    assert (report.files, report.dirs) == (1, 0) and (tmp_path / "one.txt").read_text() == "#!/bin/sh\n"


def test_the_destination_must_be_new_or_a_file(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    ok(hermes_kernel, "import os\nos.makedirs('d')\nopen('f', 'w').write('x')")
    (tmp_path / "exists").mkdir()
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.download("f", tmp_path / "exists")
    assert info.value.path == str(tmp_path / "exists")
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.upload(tmp_path / "exists", "d")
    assert info.value.path == "d" and "already exists" in str(info.value)
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.download("missing", tmp_path / "m")
    assert info.value.path == "missing" and not isinstance(info.value, UnsafePathError)


def test_over_the_size_bound_is_an_error_naming_the_entry_and_leaves_nothing(hermes_kernel: KernelHandle,
                                                                              tmp_path: Path) -> None:
    ok(hermes_kernel, "import os\nos.makedirs('big')\nopen('big/a', 'wb').write(b'a' * 600)\n"
                      "open('big/b', 'wb').write(b'b' * 600)")
    with pytest.raises(TransferTooLargeError) as info:
        hermes_kernel.download("big", tmp_path / "dl", max_bytes=1000)
    assert (info.value.path, info.value.size_bytes, info.value.limit_bytes) == ("big/b", 1200, 1000)
    assert tree(tmp_path) == {}

    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(b"x" * 2000)
    with pytest.raises(TransferTooLargeError) as info:
        hermes_kernel.upload(src, "up", max_bytes=1000)
    assert info.value.path == str(src / "a")
    assert ok(hermes_kernel, "import os\nsorted(n for n in os.listdir('.') if n.startswith(('.hermes', 'up')))") == "[]"


def test_the_bound_is_counted_on_the_bytes_really_written(hermes_kernel: KernelHandle, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that grows after it was listed is stopped by the bound while it is written."""
    from pytest_hermes_kernel.kernel import transfer

    ok(hermes_kernel, "open('grows', 'wb').write(b'g' * 4000)")
    plan_tree = transfer.plan_tree
    monkeypatch.setattr(transfer, "plan_tree", lambda entries, shown, limit: plan_tree(
        [e.__class__(e.parts, e.kind, 10, e.mode, e.nlink) for e in entries], shown, limit))
    with pytest.raises(TransferTooLargeError):
        hermes_kernel.download("grows", tmp_path / "dl", max_bytes=1000)
    assert tree(tmp_path) == {}


def test_max_transfer_bytes_is_a_kernel_option(tmp_path: Path, start: Any) -> None:
    k = start("local", max_transfer_bytes=100)
    ok(k, "open('f', 'wb').write(b'f' * 101)")
    with pytest.raises(TransferTooLargeError) as info:
        k.download("f", tmp_path / "f")
    assert info.value.limit_bytes == 100


# ------------------------------------------------------------------------------ a hand-made docker tar
def evil_tar() -> bytes:
    """What a hostile engine (or a tar-producing bug) could send for ``out``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", mode: int = 0o644, link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.size, info.linkname = kind, mode, len(data), link
            tar.addfile(info, io.BytesIO(data) if data else None)
        add("out", tarfile.DIRTYPE, mode=0o755)
        add("out/plain.txt", data=b"plain")
        add("../../escape", data=b"escaped")
        add("out/../../escape2", data=b"escaped")
        add("/abs-escape", data=b"escaped")
        add("out/suid", data=b"x", mode=0o4777)
        add("out/link", tarfile.SYMTYPE, link="/etc")
        add("out/hostname", tarfile.LNKTYPE, link="/etc/hostname")
        add("out/fifo", tarfile.FIFOTYPE)
        add("out/dev", tarfile.CHRTYPE)
        add("out/extra", data=b"not in the listing")
    return buf.getvalue()


@pytest.mark.hermes_transports("docker")
def test_a_hand_made_docker_archive_cannot_write_outside_the_destination(
        hermes_kernel: KernelHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_hermes_kernel.transports.docker.files import DockerFiles

    ok(hermes_kernel, "import os\nos.makedirs('out')\nopen('out/plain.txt', 'w').write('plain')\n"
                      "open('out/suid', 'w').write('x')\nos.chmod('out/suid', 0o4777)")
    monkeypatch.setattr(DockerFiles, "archive", lambda self, parts: iter([evil_tar()]))
    dest = tmp_path / "a" / "dl"
    report = hermes_kernel.download("out", dest)

    assert tree(tmp_path) == {"a": "dir", "a/dl": "dir", "a/dl/plain.txt": "file", "a/dl/suid": "file"}
    assert stat.S_IMODE((dest / "suid").stat().st_mode) == 0o755
    rejected = {r.path: r.reason for r in report.rejected}
    assert set(rejected) == {"../../escape", "out/../../escape2", "/abs-escape", "out/link", "out/hostname",
                             "out/fifo", "out/dev", "out/extra"}, rejected
    assert "symlink" in rejected["out/link"] and "hard link" in rejected["out/hostname"]
    assert "listing" in rejected["out/extra"] and "'..'" in rejected["../../escape"]


# ------------------------------------------------------------------------------ an SFTP server's listing
class FakeSftp:
    """An SFTP server whose listing sends ``..``, ``a/b`` and absolute names, and loops back."""

    def __init__(self) -> None:
        self.files = {"/wd/out/ok.txt": b"fine", "/wd/out/../../escape": b"escaped", "/etc/passwd": b"root:x"}
        self.opened: list[str] = []

    def lstat(self, path: str) -> Any:
        if path in ("/wd", "/wd/out"):
            return SimpleNamespace(st_mode=stat.S_IFDIR | 0o755, st_size=0)
        if path in self.files:
            return SimpleNamespace(st_mode=stat.S_IFREG | 0o644, st_size=len(self.files[path]))
        raise FileNotFoundError(path)

    def listdir_attr(self, path: str) -> list[Any]:
        assert path == "/wd/out", f"descended into {path}"
        attr = lambda name, mode, size=0, longname=None: SimpleNamespace(  # noqa: E731
            filename=name, st_mode=mode, st_size=size, longname=longname)
        return [attr("..", stat.S_IFDIR | 0o755), attr("../../escape", stat.S_IFREG | 0o644, 7),
                attr("/etc/passwd", stat.S_IFREG | 0o644, 6), attr("ok.txt", stat.S_IFREG | 0o644, 4,
                                                                      "-rw-r--r--    1 u g 4 Dec  1 12:00 ok.txt"),
                attr("two", stat.S_IFREG | 0o644, 1, "-rw-r--r--    2 u g 1 Dec  1 12:00 two")]

    def open(self, path: str, mode: str = "r") -> Any:
        self.opened.append(path)
        data = self.files[path]
        fh = io.BytesIO(data)
        fh.stat = lambda: SimpleNamespace(st_mode=stat.S_IFREG | 0o644)  # type: ignore[attr-defined]
        return fh

    def close(self) -> None:
        pass


def test_an_sftp_listing_with_dotdot_and_absolute_names_is_never_joined_to_a_local_path(tmp_path: Path) -> None:
    from pytest_hermes_kernel.transports.ssh.files import SftpFiles

    sftp = FakeSftp()
    report = download(SftpFiles("/wd", sftp), "out", tmp_path / "dl", max_bytes=1000)

    assert tree(tmp_path) == {"dl": "dir", "dl/ok.txt": "file"}
    assert sftp.opened == ["/wd/out/ok.txt"]
    assert {r.path: r.reason for r in report.rejected} == {
        "out/..": "its name '..' is not a plain name: not copied",
        "out/../../escape": "its name '../../escape' holds '/' or NUL: not copied",
        "out//etc/passwd": "its name '/etc/passwd' holds '/' or NUL: not copied",
        "out/two": "a hard link (2 names): not copied"}
