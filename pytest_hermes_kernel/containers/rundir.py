"""Where a run keeps its files: one private directory per run, made safely.

A run's files (the state and lock files of :class:`~.sharing.SharedResource`, the sshd private
key) live in ``<tmp>/pytest-hermes-kernel-<uid>/run-<run id>/``, where ``<tmp>`` is
:func:`tempfile.gettempdir` (``$TMPDIR``, else ``/tmp``). The per-user directory stays (like
pytest's ``pytest-of-<user>``: keeping the name is what stops another user from taking it);
a run directory is removed when the run ends (its last shared resource's last member removes
it once it is empty) or, for a run whose processes all died, by ``hermes-kernel sweep``.

Both names are predictable, so another user could make them first. Every directory made or
reused here is checked after ``mkdir`` with ``lstat`` (never following a symlink): it must be a
real directory, owned by this user, with no access for group or others (0700); and the temp dir
they sit in must not let others replace them (not writable by others, or sticky like
``/tmp``). Anything else raises :class:`~pytest_hermes_kernel.errors.UnsafeRunDirError`
naming the path and what is wrong with it; nothing is ever chmodded, chowned or removed to
make it fit. Files inside a checked directory are then safe from other users by its mode.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from typing import Any

from ..errors import ConfigError, UnsafeRunDirError

__all__ = ["KEPT_DIR_NAME", "REUSE_DIR_NAME", "RUN_DIR_PREFIX", "is_private_dir", "is_run_file", "kept_dir",
           "remove_if_empty", "reuse_dir", "run_dir", "run_dir_path",
           "run_dirs", "runs_root", "user_dir"]

#: Name of the per-user directory in the temp dir: ``pytest-hermes-kernel-<uid>``.
USER_DIR_PREFIX = "pytest-hermes-kernel-"
#: Name of a run's directory in the per-user one: ``run-<run id>``.
RUN_DIR_PREFIX = "run-"
#: Name of the directory in the per-user one that holds kept kernels' records (:mod:`.kept`).
KEPT_DIR_NAME = "kept"
#: Name of the directory in the per-user one that holds the records of containers kept between
#: runs (``--hermes-reuse``, :mod:`.reuse`); removed when the last record goes.
REUSE_DIR_NAME = "reuse"
#: What a run id may be to name a directory (the same rule as the run id setting's).
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def runs_root(directory: str | None = None) -> str:
    """The per-user directory that holds every run directory (not created here).

    :param directory: the temp dir to use; ``None``: :func:`tempfile.gettempdir`.
    :returns: ``<directory>/pytest-hermes-kernel-<uid>``.
    """
    return os.path.join(directory or tempfile.gettempdir(), f"{USER_DIR_PREFIX}{os.getuid()}")


def user_dir(directory: str | None = None) -> str:
    """Make (or reuse) the per-user directory, checked like a run directory, and return its path
    (it holds the image build lock: one in the temp dir itself, made by another user first,
    could not be opened).

    :raises UnsafeRunDirError: as :func:`run_dir` does.
    """
    root = runs_root(directory)
    _check_parent(os.path.dirname(root))
    _private_dir(root)
    return root


def run_dir_path(run_id: str, directory: str | None = None) -> str:
    """Where run ``run_id`` keeps its files (not created here; see :func:`run_dir`).

    :param run_id: the run's id (letters, digits, ``_.-``; at most 128 characters).
    :param directory: the temp dir to use; ``None``: :func:`tempfile.gettempdir`.
    :raises ConfigError: if ``run_id`` cannot name a directory.
    """
    if not RUN_ID_PATTERN.fullmatch(run_id):
        raise ConfigError(f"a run id must be 1-128 letters, digits, '_', '.' or '-', not {run_id!r}")
    return os.path.join(runs_root(directory), f"{RUN_DIR_PREFIX}{run_id}")


def run_dir(run_id: str, directory: str | None = None) -> str:
    """Make (or reuse) run ``run_id``'s private directory and return its path.

    :param run_id: the run's id (see :func:`run_dir_path`).
    :param directory: the temp dir to use; ``None``: :func:`tempfile.gettempdir`.
    :raises UnsafeRunDirError: if it or the per-user directory is a symlink, not a directory,
        owned by another user or open to group or others, or the temp dir lets others replace it.
    :raises ConfigError: if ``run_id`` cannot name a directory.
    """
    path = run_dir_path(run_id, directory)
    root = os.path.dirname(path)
    _check_parent(os.path.dirname(root))
    _private_dir(root)
    _private_dir(path)
    return path


def kept_dir(directory: str | None = None, *, create: bool = True) -> str:
    """The private directory of the records of kernels kept for post-mortem (:mod:`.kept`):
    ``<tmp>/pytest-hermes-kernel-<uid>/kept``, made (or reused) and checked like a run directory.

    :param directory: the temp dir to use; ``None``: :func:`tempfile.gettempdir`.
    :param create: make it when missing (``False``: only check one that exists).
    :raises UnsafeRunDirError: as :func:`run_dir` does.
    """
    path = os.path.join(runs_root(directory), KEPT_DIR_NAME)
    if create:
        _check_parent(os.path.dirname(runs_root(directory)))
        _private_dir(runs_root(directory))
        _private_dir(path)
    elif os.path.lexists(path) and (problem := _problem(path)) is not None:
        raise UnsafeRunDirError(f"refusing to read kept kernels from {path}: {problem}", path=path, problem=problem)
    return path


def reuse_dir(directory: str | None = None, *, create: bool = True) -> str:
    """The private directory of the reuse store (:mod:`.reuse`): ``<tmp>/pytest-hermes-kernel-<uid>/reuse``,
    made (or reused) and checked like a run directory.

    :param directory: the temp dir to use; ``None``: :func:`tempfile.gettempdir`.
    :param create: make it when missing; ``False`` only returns the path.
    :raises UnsafeRunDirError: as :func:`run_dir` does (only when ``create``).
    """
    root = runs_root(directory)
    path = os.path.join(root, REUSE_DIR_NAME)
    if create:
        _check_parent(os.path.dirname(root))
        _private_dir(root)
        _private_dir(path)
    return path


def run_files_problem(directory: str | None = None) -> tuple[str, str] | None:
    """Why this user's run files cannot be kept in the temp dir (:func:`user_dir`'s refusal) and
    what to do, or ``None`` when they can: ``hermes-kernel doctor`` said docker and ssh were ok, and
    each of their tests then errored with :class:`UnsafeRunDirError`."""
    try:
        user_dir(directory)
    except UnsafeRunDirError as exc:
        why, _, hint = str(exc).partition(". Hint: ")
        return why, hint or "point TMPDIR at a directory only you can write to"
    return None


def is_private_dir(path: str) -> bool:
    """Whether ``path`` is a real directory of this user closed to group and others (never
    following a symlink): a directory a container label names is trusted only then."""
    return _problem(path) is None


def remove_if_empty(path: str) -> bool:
    """Remove a run directory when nothing is left in it.

    :returns: ``True`` when this call removed it.
    """
    try:
        os.rmdir(path)
    except OSError:  # not empty (another resource of the run is in use), or already gone
        return False
    return True


def run_dirs(directory: str | None = None) -> list[tuple[str, str]]:
    """``(run id, path)`` of every run directory in the per-user directory (sweeps read this).

    Only real directories owned by this user are listed (never a symlink); an unsafe or missing
    per-user directory lists nothing.

    :param directory: the temp dir to use; ``None``: :func:`tempfile.gettempdir`.
    """
    root = runs_root(directory)
    if _problem(root) is not None:
        return []
    found = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.startswith(RUN_DIR_PREFIX) and _problem(path) is None:
            found.append((name[len(RUN_DIR_PREFIX):], path))
    return found


def is_run_file(path: str, directory: str | None = None) -> bool:
    """Whether ``path`` names a file directly inside one of this user's run directories.

    A container label names its state file; sweeps touch that file only when this holds (a
    label is not proof that a path is ours).
    """
    parent = os.path.dirname(os.path.abspath(path))
    return any(parent == run for _, run in run_dirs(directory))


def _private_dir(path: str) -> None:
    """``mkdir`` 0700, or reuse; either way check it with ``lstat`` (see module docstring)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    problem = _problem(path)
    if problem is not None:
        raise UnsafeRunDirError(
            f"refusing to keep run files in {path}: {problem}. Hint: another user may have made it "
            "first; remove it, or point TMPDIR at a directory only you can write to",
            path=path, problem=problem)


def _problem(path: str) -> str | None:
    """What makes ``path`` unfit as a private directory, or ``None`` when it is fit."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != os.getuid():
        return f"it is owned by uid {st.st_uid}, not {os.getuid()}"
    if st.st_mode & 0o077:
        return f"its mode is {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def _check_parent(path: str) -> None:
    """The temp dir must not let others rename what it holds (sticky, or writable by us only)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UnsafeRunDirError(f"the temp dir {path} cannot be used: {exc.strerror}",
                                path=path, problem=str(exc.strerror)) from None
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        problem = f"others can write to it (mode {stat.S_IMODE(st.st_mode):04o}) and it is not sticky"
        raise UnsafeRunDirError(f"refusing to keep run files under {path}: {problem}. "
                                "Hint: point TMPDIR at a directory only you can write to",
                                path=path, problem=problem)


#: The largest record or state file the kit reads back (1 MiB: its own are a few KB).
RECORD_MAX_BYTES = 1 << 20


def read_json_file(path: str, max_bytes: int = RECORD_MAX_BYTES) -> Any:
    """The JSON value of the regular file ``path`` (a record or state file the kit wrote, as
    far as it knows: another process, or a hand, may have put anything there).

    :param max_bytes: a longer file is not read.
    :raises OSError: as :func:`read_small_file`.
    :raises ValueError: if it is not UTF-8 JSON.
    """
    return json.loads(read_small_file(path, max_bytes).decode("utf-8"))


def read_small_file(path: str, max_bytes: int = RECORD_MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``, a record the kit wrote (as far as it knows).

    :param max_bytes: a longer file is not read.
    :raises OSError: if it cannot be opened, is no regular file (``open`` of a fifo there waited
        for a writer forever: ``hermes-kernel ls``, ``exec`` and ``sweep`` hung) or is over ``max_bytes``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"{info.st_size} bytes, over the {max_bytes} a record may have", path)
        return os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)


def read_file_tail(path: str, max_bytes: int) -> bytes:
    """The last ``max_bytes`` bytes of the regular file ``path`` (a log in a kernel dir: its cells'
    working dir, where a cell may have put a fifo, whose ``open`` waited for a writer for good).

    :raises OSError: if it cannot be opened or is no regular file.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.lseek(fd, max(0, os.fstat(fd).st_size - max_bytes), os.SEEK_SET)
        return os.read(fd, max_bytes)
    finally:
        os.close(fd)


def open_lock_file(path: str) -> int:
    """Open (or make, 0600) the lock file ``path`` for an ``flock``: a regular file, never through
    a symlink; its fd.

    :raises UnsafeRunDirError: if it is a symlink, a directory, a fifo or cannot be opened (a
        traceback from ``hermes-kernel exec`` and ``attach``).
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        problem = "a symlink" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
    else:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)
        problem = "not a regular file"
    raise UnsafeRunDirError(f"refusing to use the lock file {path}: {problem}", path=path, problem=problem)
