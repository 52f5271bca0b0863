"""A transfer that cannot finish says so, naming the path, and leaves nothing half-done:
no partial tree presented as complete, no temp name left in the kernel, no bare ``OSError``,
docker ``APIError`` or tarfile error naming a temp dir or nothing at all.

* an upload the kernel's user cannot rename into place (a read-only directory): docker's
  ``put_archive`` (as root) wrote the temp, and the abort (as the kernel's user) could not remove
  it: a ``.hermes-part-*`` stayed behind per try; over ssh, a bare ``PermissionError``;
* a file removed between the listing and the copy, or an engine archive cut short: the docker
  download left it out and called the report complete (ssh rejects it, local refuses);
* a download whose local side cannot be written (a directory onto an existing file, a parent
  that is a file, a full disk), or an upload whose local file went away: a bare ``OSError``;
* a kernel path given as a ``Path``, a file sent to ``"work/"``: refused as unsafe, taken as a
  file named ``work``. (A kernel with a relative ``cwd=``, whose transfers went to the caller's
  dir and were then refused: ``test_a_relative_cwd_is_entered_once.py``.)
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from typing import Any
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.errors import FileTransferError, UnsafePathError
from tests.support import tmpfs_at

from .test_handed_b45_file_transfers import ok, tree


def test_an_upload_the_kernel_cannot_rename_into_place_leaves_no_temp_name(hermes_kernel: KernelHandle,
                                                                            tmp_path: Path) -> None:
    if ok(hermes_kernel, "import os\nos.geteuid()") == "0":
        pytest.skip("the kernel runs as root here: a read-only directory does not stop it")
    ok(hermes_kernel, "os.makedirs('ro')\nopen('ro/x', 'w').write('old')\nos.chmod('ro', 0o555)")
    (tmp_path / "f").write_text("new")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree/a").write_text("a")
    try:
        for local, kernel_path in ((tmp_path / "f", "ro/new"), (tmp_path / "f", "ro/x"), (tmp_path / "tree", "ro/t")):
            with pytest.raises(FileTransferError) as info:  # ssh: was a bare PermissionError naming nothing
                hermes_kernel.upload(local, kernel_path)
            assert info.value.path.startswith(kernel_path), info.value  # not the temp name it wrote first
            assert "ermission denied" in str(info.value) and ".hermes-part" not in str(info.value), info.value
        assert ok(hermes_kernel, "sorted(os.listdir('ro')), open('ro/x').read()") == "(['x'], 'old')"
    finally:
        ok(hermes_kernel, "os.chmod('ro', 0o755)")  # the kernel dir can be removed


def test_a_file_gone_after_the_listing_is_never_a_complete_download(hermes_kernel: KernelHandle, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's own process removes ``d/b`` after the tree was listed, before it is copied."""
    ok(hermes_kernel, "import os\nos.makedirs('d')\nfor n in 'abc':\n    open('d/' + n, 'w').write(n)")
    files = files_class(hermes_kernel.transport.name)
    list_tree = files.list_tree

    def list_then_remove(self: object, parts: tuple[str, ...]) -> object:
        listed = list_tree(self, parts)  # type: ignore[arg-type]
        ok(hermes_kernel, "os.remove('d/b')")
        return listed

    monkeypatch.setattr(files, "list_tree", list_then_remove)
    try:
        report = hermes_kernel.download("d", tmp_path / "dl")
    except FileTransferError as exc:
        assert exc.path == "d/b" and tree(tmp_path) == {}, exc
    else:
        assert not report.complete and [r.path for r in report.rejected] == ["d/b"], report
        assert report.files == 2 and tree(tmp_path / "dl") == {"a": "file", "c": "file"}


def files_class(transport: str) -> type:
    """The transport's :class:`~pytest_hermes_kernel.kernel.files.KernelFiles` class."""
    from pytest_hermes_kernel.transports.docker.files import DockerFiles
    from pytest_hermes_kernel.transports.filecell.files import FileCellFiles
    from pytest_hermes_kernel.transports.files import LocalFiles
    from pytest_hermes_kernel.transports.ssh.files import SftpFiles

    return {"local": LocalFiles, "docker": DockerFiles, "ssh": SftpFiles, "filecell": FileCellFiles}[transport]


@pytest.mark.hermes_transports("local")
def test_a_download_the_local_side_cannot_take_is_an_error_naming_it(hermes_kernel: KernelHandle,
                                                                      tmp_path: Path) -> None:
    ok(hermes_kernel, "import os\nos.makedirs('d')\nopen('d/a', 'w').write('a')")
    (tmp_path / "file").write_text("keep")
    with pytest.raises(FileTransferError) as info:  # was NotADirectoryError, after copying the tree
        hermes_kernel.download("d", tmp_path / "file")
    assert info.value.path == str(tmp_path / "file") and "already exists" in str(info.value)
    with pytest.raises(FileTransferError) as info:  # was a bare FileExistsError
        hermes_kernel.download("d/a", tmp_path / "file" / "a")
    assert info.value.path == str(tmp_path / "file") and "is not a directory" in str(info.value)
    assert tree(tmp_path) == {"file": "file"} and (tmp_path / "file").read_text() == "keep"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root's ``mount``; skipped where the machine does not allow it)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    with tmpfs_at(disk, "size=64k", "a small tmpfs"):
        yield disk


@pytest.mark.hermes_transports("local")
def test_a_download_onto_a_full_disk_is_an_error_naming_the_entry(hermes_kernel: KernelHandle,
                                                                   small_disk: Path) -> None:
    """And the file it was reading is closed (its generator held it open until a GC)."""
    ok(hermes_kernel, "import os\nos.makedirs('d')\nopen('d/small', 'wb').write(b's' * 10)\n"
                      "open('d/zbig', 'wb').write(os.urandom(1 << 20))")
    with pytest.raises(FileTransferError) as info:  # was a bare OSError: [Errno 28] No space left on device
        hermes_kernel.download("d", small_disk / "dl")
    assert info.value.path == str(small_disk / "dl" / "zbig") and "No space left" in str(info.value)
    assert os.listdir(small_disk) == []
    assert not [f for f in open_files() if "zbig" in f], open_files()  # the error's traceback held it open


def open_files() -> list[str]:
    """What this process's file descriptors point to."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the listing's own fd, closed by now
            pass
    return found


def test_a_local_file_gone_during_an_upload_is_an_error_naming_it(hermes_kernel: KernelHandle, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A local file removed after the tree was listed: a bare FileNotFoundError (over ssh, a
    FileTransferError that named the kernel's path); now the local file, and nothing is left."""
    src = tmp_path / "src"
    src.mkdir()
    for name in "abc":
        (src / name).write_text(name)
    _removed_once_listed(monkeypatch, src / "b")
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.upload(src, "up")
    assert info.value.path == str(src / "b") and "No such file" in str(info.value)
    assert ok(hermes_kernel, "import os\nsorted(n for n in os.listdir('.') if n.startswith(('.hermes', 'up')))") == "[]"



def test_a_kernel_path_is_a_str_or_a_path_object(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    """A ``Path`` was refused as "only a relative path ... is allowed" (it was one), and a wrong
    type was told the same; a path object now works and anything else is a TypeError naming it."""
    from pathlib import PurePosixPath

    (tmp_path / "f").write_text("x")
    assert hermes_kernel.upload(tmp_path / "f", PurePosixPath("sub/f")).destination == "sub/f"
    assert hermes_kernel.download(Path("sub/f"), tmp_path / "back").files == 1
    assert (tmp_path / "back").read_text() == "x"
    for bad in (None, 5, b"sub/f"):
        with pytest.raises(TypeError, match="kernel_path must be a str or a path object"):
            hermes_kernel.download(bad, tmp_path / "never")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="kernel_path must be a str or a path object"):
            hermes_kernel.upload(tmp_path / "f", bad)  # type: ignore[arg-type]
    with pytest.raises(UnsafePathError):
        hermes_kernel.upload(tmp_path / "f", PurePosixPath("/etc/f"))


@pytest.mark.hermes_transports("docker")
@pytest.mark.hermes_kernel(container="fresh")
def test_a_transfer_to_a_docker_kernel_whose_container_died_names_the_path(hermes_kernel: KernelHandle,
                                                                          tmp_path: Path) -> None:
    """docker's bare ``APIError: 409 ... is not running`` came up; now a FileTransferError naming the path."""
    ok(hermes_kernel, "open('a', 'w').write('a')")
    transport = hermes_kernel.transport
    transport.api.kill(hermes_kernel.start().launched.extra["container"])  # type: ignore[attr-defined]
    (tmp_path / "f").write_text("x")
    for path, move in (("a", lambda: hermes_kernel.download("a", tmp_path / "a")),
                       ("f", lambda: hermes_kernel.upload(tmp_path / "f", "f"))):
        with pytest.raises(FileTransferError) as info:
            move()
        assert info.value.path == path and "cannot be reached" in str(info.value), info.value
    assert tree(tmp_path) == {"f": "file"}


def test_a_file_sent_to_a_name_ending_in_a_slash_is_refused(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    """``upload("a.txt", "work/")`` made a *file* named ``work`` (and ``download("f", "out/")`` a
    file ``out``): a name written as a directory is refused for a file, naming it; nothing is made."""
    ok(hermes_kernel, "open('f', 'w').write('f')")
    (tmp_path / "a.txt").write_text("a")
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.upload(tmp_path / "a.txt", "work/")
    assert info.value.path == "work/" and "'work/a.txt'" in str(info.value)
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.download("f", f"{tmp_path}/out/")
    assert info.value.path == f"{tmp_path}/out/" and repr(f"{tmp_path}/out/f") in str(info.value)
    assert ok(hermes_kernel, "import os\nos.path.exists('work')") == "False"
    assert tree(tmp_path) == {"a.txt": "file"}
    (tmp_path / "d").mkdir()
    assert hermes_kernel.upload(tmp_path / "d", "dir/").destination == "dir"  # a directory may be named so


@pytest.mark.hermes_transports("docker")
def test_a_docker_archive_cut_short_is_never_a_complete_download(hermes_kernel: KernelHandle, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine stream cut mid-file raised tarfile's bare ``ReadError: unexpected end of data``;
    one cut at a header ended the tar quietly, and the files after it were simply not there."""
    from pytest_hermes_kernel.transports.docker.files import DockerFiles

    ok(hermes_kernel, "import os\nos.makedirs('d')\nfor n in 'ab':\n    open('d/' + n, 'wb').write(os.urandom(300000))")
    archive, sent = DockerFiles.archive, []
    monkeypatch.setattr(DockerFiles, "archive", lambda self, parts: iter(sent.append(b"".join(archive(self, parts)))
                                                                         or sent))
    assert hermes_kernel.download("d", tmp_path / "whole").complete
    whole = sent[0]
    b_header = whole.index(b"d/b\0")  # the second member's header
    monkeypatch.setattr(DockerFiles, "archive", lambda self, parts: iter([whole[:b_header - 100_000]]))
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.download("d", tmp_path / "mid-file")
    assert info.value.path == "d" and "cut short or damaged" in str(info.value), info.value
    assert tree(tmp_path) == {"whole": "dir", "whole/a": "file", "whole/b": "file"}

    monkeypatch.setattr(DockerFiles, "archive", lambda self, parts: iter([whole[:b_header + 100]]))
    report = hermes_kernel.download("d", tmp_path / "at-a-header")
    assert not report.complete and [r.path for r in report.rejected] == ["d/b"], report
    assert "cut short" in report.rejected[0].reason


def test_a_failed_download_takes_back_the_parent_dirs_it_made(hermes_kernel: KernelHandle, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``download(..., "kept/a/b/dl")`` made ``a/b`` for its staging dir, and left them when it
    failed (here: the file grew past the bound after it was listed, so it fails while written)."""
    from pytest_hermes_kernel.kernel import transfer

    ok(hermes_kernel, "import os\nos.makedirs('d')\nopen('d/grows', 'wb').write(b'g' * 4000)")
    plan_tree = transfer.plan_tree
    monkeypatch.setattr(transfer, "plan_tree", lambda entries, shown, limit: plan_tree(
        [e.__class__(e.parts, e.kind, 10, e.mode, e.nlink) for e in entries], shown, limit))
    (tmp_path / "kept").mkdir()
    with pytest.raises(FileTransferError):
        hermes_kernel.download("d", tmp_path / "kept/a/b/dl", max_bytes=1000)
    assert tree(tmp_path) == {"kept": "dir"}


def test_a_working_dir_gone_is_named(hermes_kernel_factory: Any, tmp_path: Path) -> None:
    """Over ssh it was ". does not exist" (local, docker and filecell named the working dir)."""
    first = hermes_kernel_factory()
    wd = ast.literal_eval(ok(first, "import os, tempfile\nwd = tempfile.mkdtemp(prefix='bf-wd-')\nwd") or "")
    second = hermes_kernel_factory(cwd=wd)
    ok(second, "1")
    ok(first, "os.rmdir(wd)")
    (tmp_path / "f").write_text("x")
    for move in (lambda: second.download("a", tmp_path / "a"), lambda: second.upload(tmp_path / "f", "f")):
        with pytest.raises(FileTransferError) as info:
            move()
        assert str(info.value) == f"the working dir {wd} does not exist", str(info.value)


def test_a_failed_upload_takes_back_the_parent_dirs_it_made(hermes_kernel: KernelHandle, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``upload(..., "new/deeper/up")`` made ``new/deeper`` in the kernel, and left them when it failed."""
    ok(hermes_kernel, "import os\nos.makedirs('kept')")
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_text("a")
    _removed_once_listed(monkeypatch, src / "a")
    for destination in ("new/deeper/up", "kept/new/up"):
        (src / "a").write_text("a")
        with pytest.raises(FileTransferError):
            hermes_kernel.upload(src, destination)
    assert ok(hermes_kernel, "'new' in os.listdir('.'), os.listdir('kept')") == "(False, [])"


def _removed_once_listed(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    """Remove ``victim`` right after the upload lists its local tree (a file gone mid-upload)."""
    from pytest_hermes_kernel.kernel import transfer

    local_entries = transfer.local_entries

    def list_then_remove(root: Path) -> object:
        listed = local_entries(root)
        victim.unlink()
        return listed

    monkeypatch.setattr(transfer, "local_entries", list_then_remove)
