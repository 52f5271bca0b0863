"""Kernels kept for post-mortem (``--hermes-keep-failed``): one record file per kernel.

A failed test's kernel that is kept outlives pytest (its runner listens on a socket and ends by
its own orphan timer, the TTL). What another process needs to reach it again is a
:class:`KeptKernel` record: the kernel id, its transport and locator, its attach token, and when
it expires. Records are ``<kernel id>.json`` files, 0600, in the per-user 0700 directory
:func:`~.rundir.kept_dir` (``<tmp>/pytest-hermes-kernel-<uid>/kept/``), written atomically
(never through a symlink). The token is a secret: it is in the file, never in a repr or a line
that ``hermes-kernel ls`` prints.

Who reads them: ``hermes-kernel ls/attach/exec/sweep`` (:mod:`pytest_hermes_kernel.cli`), and
the sweeps of dead hosts' leftovers, which leave an unexpired kept kernel's processes and kernel
dir alone (:class:`KeptNearby`: a local kernel carries its host's temp dir, :data:`TMPDIR_ENV` in
its processes' environment and a line of its kernel dir's host file, so a sweep run with another
``TMPDIR`` reads the records there too; it killed them), and the docker transport,
whose run's last member, start-up sweep and leak probe leave a container holding an unexpired
kept kernel alone (:func:`exempt_container_ids`, :func:`holds_kept_kernel`: the record's
locator names the container; the container's :data:`~.labels.LABEL_TMPDIR` label says under
which temp dir to look, so a sweep run with another ``TMPDIR`` finds the record too).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from ..errors import ConfigError, KernelInUseError, UnsafeRunDirError
from .labels import LABEL_TMPDIR, label_path
from .rundir import kept_dir, open_lock_file, read_json_file
from .sharing import flock_current

log = logging.getLogger(__name__)

__all__ = ["TMPDIR_ENV", "KeptKernel", "KeptNearby", "exempt_container_ids", "exempt_kernel_ids", "find",
           "holds_kept_kernel", "in_use_by", "kept_container_ids", "load_all", "remove", "save", "save_secret", "stays_for_kept_kernel", "time_left_words",
           "unexpired"]

#: In a local kernel's processes' environment: its host's temp dir, under which the host writes
#: the kernel's record if it keeps it (the local counterpart of :data:`~.labels.LABEL_TMPDIR`).
TMPDIR_ENV = "HERMES_KERNEL_TMPDIR"


@dataclass(frozen=True)
class KeptKernel:
    """The record of one kept kernel.

    :param kernel_id: the kernel's id.
    :param transport: its transport's name (``local``, ...).
    :param locator: the transport's :meth:`~pytest_hermes_kernel.kernel.contract.Transport.locator`.
    :param token: the kernel's attach token (secret: never in a repr).
    :param nodeid: the failed test that kept it.
    :param kept_at: when it was kept (epoch seconds).
    :param detached_at: when the last client detached (epoch seconds): the TTL runs from there.
    :param ttl_s: the kept runner's orphan timer (seconds without a client before it ends).
    :param host_pid: the pytest process that kept it.
    :param worker_pid: the worker's pid when it was kept (where the kernel runs).
    :param rootdir: the pytest rootdir ``nodeid`` is relative to (``None``: an older record).
    :param secrets: the secret values of the kernel's own ``env`` (and of the host variables its
        ``env_allow`` let through), redacted from what ``exec`` and ``attach`` print (secret: never in
        a repr; they are in the kernel the token reaches anyway; written beside the record, :data:`ENV_SECRETS`).
    :param newer: the fields of a newer kit's record this kit does not know, written back as they
        were (such a record was skipped as unreadable, and the process sweep killed its kernel).
    """

    kernel_id: str
    transport: str
    locator: dict[str, Any]
    token: str = field(repr=False)
    nodeid: str
    kept_at: float
    detached_at: float
    ttl_s: float
    host_pid: int
    worker_pid: int | None = None
    rootdir: str | None = None
    secrets: list[str] = field(default_factory=list, repr=False)
    newer: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def expires_at(self) -> float:
        """When the runner's orphan timer ends it, unless a client attaches first (epoch seconds)."""
        return self.detached_at + self.ttl_s

    def expired(self, now: float | None = None) -> bool:
        """Whether the TTL has run out (``now``: epoch seconds, default the current time)."""
        return (time.time() if now is None else now) >= self.expires_at

    def gone_words(self) -> str:
        """What ``exec``/``attach`` say first of an expired kernel they cannot reach (they said only that
        its socket ``refused the connection: No such file or directory``, where ``ls`` said ``expired``)."""
        at = time.strftime("%H:%M:%S", time.localtime(self.expires_at))
        return (f"kernel {self.kernel_id} expired at {at}: no client came for its TTL ({self.ttl_s:g} s, "
                f"--hermes-keep-failed-ttl), so it ended by itself and its namespace is gone; ")

    def detached_now(self) -> KeptKernel:
        """This record after a client detached now (the TTL starts again)."""
        return replace(self, detached_at=time.time())

    def kept_by(self, test: str, cwd: str | None = None) -> bool:
        """Whether test ``test`` (``hermes-kernel ls --test``) kept it: its node id is ``test``'s or
        one of its legs', or in the file or class ``test`` names.

        ``test`` may leave out leading directories of the node id's path (a record holds the id from
        the rootdir, pytest prints it from where it was run) and may start with ``./``. With the
        record's ``rootdir``, ``test``'s path may also be one from ``cwd`` (default: the current
        directory) or an absolute one: pytest run above the rootdir prints ``proj/tests/test_x.py``.
        """
        test, nodeid = test.removeprefix("./"), self.nodeid
        path = nodeid.partition("::")[0]
        starts = [0] + [i + 1 for i, c in enumerate(path) if c == "/"]
        if any(_names(nodeid[i:], test) for i in starts):
            return True
        if self.rootdir is None:
            return False
        file, sep, rest = test.partition("::")
        where = os.path.relpath(os.path.join(cwd or os.getcwd(), file), self.rootdir)
        return not where.startswith("..") and _names(nodeid, where + sep + rest)


def _names(nodeid: str, test: str) -> bool:
    """Whether ``test`` is ``nodeid`` or a prefix of it that ends where pytest's ids do."""
    return nodeid == test or (nodeid.startswith(test) and nodeid[len(test):].startswith(("[", "::")))


def _path(kernel_id: str, directory: str | None) -> str:
    return os.path.join(kept_dir(directory), f"{kernel_id}.json")


def save(record: KeptKernel, directory: str | None = None) -> str:
    """Write ``record`` (0600, atomically, replacing an earlier one); returns its path.

    :raises UnsafeRunDirError: if the kept directory is not private (see :func:`~.rundir.kept_dir`).
    """
    data = asdict(record)
    if secrets := data.pop("secrets"):  # beside it, not in it: a kit before 2026-12-06 skips a record with
        save_secret(record.kernel_id, ENV_SECRETS, json.dumps(secrets), directory)  # a field it does not know
    return _write_private(_path(record.kernel_id, directory), json.dumps({**data.pop("newer"), **data}))


#: The file beside a record (``<kernel id>.env-secrets``, :func:`save_secret`) holding its ``secrets``:
#: in the record, a kit before 2026-12-06 could not read it (``ls`` did not list the kernel, and its
#: sweeps killed the kernel and removed its container as an orphan's); its :func:`remove` removes it.
ENV_SECRETS = "env-secrets"


def _with_env_secrets(record: KeptKernel, root: str) -> KeptKernel:
    """``record`` with the secrets :func:`save` wrote beside it (none: as it is)."""
    try:
        secrets = read_json_file(os.path.join(root, f"{record.kernel_id}.{ENV_SECRETS}"))
    except (OSError, ValueError):
        return record
    return replace(record, secrets=[s for s in secrets if isinstance(s, str)]) if isinstance(secrets, list) else record


def _from_json(data: Any) -> KeptKernel:
    """The record of a file's JSON; fields this kit does not know go to ``newer``.

    :raises TypeError: if it is no object, or lacks a field.
    """
    known = {f.name for f in fields(KeptKernel)} - {"newer"}
    return KeptKernel(**{k: v for k, v in data.items() if k in known},
                      newer={k: v for k, v in data.items() if k not in known})


def _write_private(path: str, text: str) -> str:
    """Write ``text`` as ``path``, 0600, atomically (a new file renamed over it, never followed
    through a symlink); returns ``path``."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:  # a full disk: it named no file, and the temp file stayed
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OSError(exc.errno, exc.strerror, path) from None
    return path


def save_secret(kernel_id: str, name: str, text: str, directory: str | None = None) -> str:
    """Write a secret a kept kernel's record refers to (an ssh private key: ``name``) as
    ``<kernel id>.<name>`` (0600, beside the record, never through a symlink); returns its path.
    :func:`remove` removes it with the record.

    :raises UnsafeRunDirError: if the kept directory is not private.
    :raises ValueError: if ``kernel_id`` or ``name`` is not a plain file name part.
    """
    if not (re.fullmatch(r"[\w-]+", kernel_id) and re.fullmatch(r"[\w-]+", name)):
        raise ValueError(f"not a kept-kernel secret name: {kernel_id!r}, {name!r}")
    return _write_private(os.path.join(kept_dir(directory), f"{kernel_id}.{name}"), text)


def load_all(directory: str | None = None, *, skipped: list[str] | None = None) -> list[KeptKernel]:
    """Every kept kernel's record, oldest first: by when it was kept, not when its last client left
    (``ls --ids | tail -n 1`` is the newest kept; unreadable files, and records of the wrong shape,
    are skipped).

    :param skipped: if given, gets the path of each ``.json`` file skipped (for a command to say so:
        :func:`skipped_note`).
    """
    root = kept_dir(directory, create=False)
    try:
        names = sorted(n for n in os.listdir(root) if n.endswith(".json"))
    except OSError:
        return []
    records = []
    for name in names:
        try:
            record = _from_json(read_json_file(os.path.join(root, name)))
        except (OSError, ValueError, TypeError, AttributeError):
            record = None
        if record is not None and _well_formed(record, name.removesuffix(".json")):
            records.append(_with_env_secrets(record, root) if not record.secrets else record)
        elif skipped is not None:
            skipped.append(os.path.join(root, name))
    return sorted(records, key=lambda r: (r.kept_at, r.kernel_id))


def skipped_note(skipped: list[str]) -> str:
    """One line naming the record files :func:`load_all` skipped (``""`` for none): a record no
    command can read is never listed nor swept, so it would otherwise sit there unseen."""
    if not skipped:
        return ""
    names = ", ".join(os.path.basename(path) for path in skipped[:5]) + (", ..." if len(skipped) > 5 else "")
    return (f"{len(skipped)} file(s) in {os.path.dirname(skipped[0])} are not kept-kernel records this version "
            f"can read (damaged, hand-written or another version's), left alone: {names}")


#: The type of each field of a record (``float`` fields take an ``int`` too; ``bool`` is neither).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "kernel_id": (str,), "transport": (str,), "locator": (dict,), "token": (str,), "nodeid": (str,),
    "kept_at": (int, float), "detached_at": (int, float), "ttl_s": (int, float), "host_pid": (int,),
    "worker_pid": (int, type(None)), "rootdir": (str, type(None)), "secrets": (list,)}


def _well_formed(record: KeptKernel, stem: str) -> bool:
    """Whether ``record``, read from ``<stem>.json``, has a value of its type in every field and is
    that file's kernel's: one of another shape (hand-written, damaged) made every command reading
    the records end in a traceback, and one named ``../x`` made its removal reach outside."""
    return record.kernel_id == stem and all(
        isinstance(value := getattr(record, name), types) and not isinstance(value, bool)
        for name, types in _FIELD_TYPES.items())


def find(kernel_id: str, directory: str | None = None) -> KeptKernel:
    """The record whose kernel id is ``kernel_id`` or starts with it.

    :raises ConfigError: if none matches, or a prefix matches more than one.
    """
    matches = [r for r in load_all(directory) if r.kernel_id.startswith(kernel_id)] if kernel_id else []
    exact = [r for r in matches if r.kernel_id == kernel_id]
    if len(exact) == 1 or len(matches) == 1:
        return (exact or matches)[0]
    if not kernel_id.strip():
        raise ConfigError(f"an empty kernel id ({kernel_id!r}) names no kept kernel. Hint: `hermes-kernel ls --ids` "
                          "lists the kept kernels' ids")
    if not matches:
        raise ConfigError(f"no kept kernel {kernel_id!r}. Hint: `hermes-kernel ls` lists the kept kernels")
    raise ConfigError(f"{kernel_id!r} names {len(matches)} kept kernels: give more of the id")


@contextmanager
def in_use(kernel_id: str, directory: str | None = None) -> Iterator[None]:
    """Hold kept kernel ``kernel_id`` for one command: an ``flock`` on ``<kernel id>.lock`` beside
    its record (0600, never through a symlink; removed with the record by :func:`remove`), which
    says who holds it. Released when the command ends, however it ends (the kernel drops the lock).

    :raises KernelInUseError: if another process holds it (nothing was attached).
    :raises UnsafeRunDirError: if the kept directory is not private, or the lock file is no regular file.
    """
    path = os.path.join(kept_dir(directory), f"{kernel_id}.lock")
    while True:  # the lock file of a record removed meanwhile is not the kernel's lock any more: take the new one
        fd = open_lock_file(path)
        got = flock_current(fd, path)
        if got:
            break
        if got is None:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            pid = int(holder) if holder.isdigit() else None
            raise KernelInUseError(
                f"kept kernel {kernel_id} is in use by another hermes-kernel command"
                f"{f' (pid {pid})' if pid else ''}: a kernel has one client at a time, and a second would "
                "take it from the first. Hint: leave that one (Ctrl-D ends `attach`), then try again",
                kernel_id=kernel_id, host_pid=pid)
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def in_use_by(kernel_id: str, directory: str | None = None) -> int | None:
    """The pid of the process that holds kept kernel ``kernel_id`` now (:func:`in_use`: an
    ``exec`` or ``attach`` runs on it), else ``None``. Read from ``/proc/locks``, never by taking
    the lock, which would refuse a command starting at that moment; ``None`` where it cannot be
    read. A held kernel does not expire: its runner's orphan timer waits for its client, however
    long the record's TTL has run (a console left open past it was swept, and killed, as expired).
    """
    try:
        st = os.stat(os.path.join(kept_dir(directory, create=False), f"{kernel_id}.lock"), follow_symlinks=False)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            locks = fh.read().splitlines()
    except (OSError, UnsafeRunDirError):
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for fields in map(str.split, locks):  # ``N: FLOCK ADVISORY WRITE <pid> <maj:min:inode> 0 EOF``
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == where and fields[4].isdigit():
            return int(fields[4])
    return None


def remove(kernel_id: str, directory: str | None = None) -> None:
    """Remove a kernel's record and the secrets beside it (:func:`save_secret`); gone already:
    nothing to do."""
    record = _path(kernel_id, directory)
    root = os.path.dirname(record)
    try:
        secrets = [n for n in os.listdir(root) if n.startswith(f"{kernel_id}.") and not n.endswith(".json")]
    except OSError:
        secrets = []
    for path in [record, *(os.path.join(root, n) for n in secrets)]:
        try:
            os.unlink(path)
        except (FileNotFoundError, IsADirectoryError):  # (a dir named as one is no file of the kit's: left, it
            pass  # was a traceback of the sweep)


def unexpired(directory: str | None = None) -> list[KeptKernel]:
    """Records of kept kernels whose TTL has not run out, or that a command holds now
    (:func:`in_use_by`); none when the kept directory is unsafe (a record there is not to be trusted)."""
    try:
        return [r for r in load_all(directory) if not r.expired() or in_use_by(r.kernel_id, directory)]
    except UnsafeRunDirError:
        return []


def exempt_kernel_ids(directory: str | None = None) -> set[str]:
    """Ids of unexpired kept kernels: sweeps of dead hosts' kernel processes leave them alone."""
    return {r.kernel_id for r in unexpired(directory)}


class KeptNearby:
    """The unexpired kept kernels a sweep of dead hosts' leftovers leaves alone: those of this
    process's records and of the records under the temp dir a kernel names as its host's
    (:data:`TMPDIR_ENV`), each kept dir read once per sweep.

    A record under another temp dir counts only there: the sweep's own ``TMPDIR`` no longer
    decides whether a kept kernel is a leftover (run with another one, it killed them).
    """

    def __init__(self) -> None:
        self._records: dict[str | None, list[KeptKernel]] = {}

    def _unexpired(self, tmpdirs: Collection[str | None]) -> Iterator[KeptKernel]:
        for tmpdir in {None, *tmpdirs}:
            if tmpdir not in self._records:
                self._records[tmpdir] = unexpired(tmpdir)
            yield from self._records[tmpdir]

    def holds_kernel(self, kernel_id: str | None, tmpdir: str | None) -> bool:
        """Whether ``kernel_id`` is an unexpired kept kernel's, among this process's records or
        those under ``tmpdir`` (the host's temp dir the kernel names; ``None``: none named)."""
        return bool(kernel_id) and any(r.kernel_id == kernel_id for r in self._unexpired({tmpdir}))

    def holds_dir(self, path: str, tmpdir: str | None) -> bool:
        """Whether ``path`` is an unexpired kept kernel's kernel dir (see :meth:`holds_kernel`)."""
        real = os.path.realpath(path)
        return any(r.locator.get("kernel_dir") and os.path.realpath(str(r.locator["kernel_dir"])) == real
                   for r in self._unexpired({tmpdir}))


def exempt_container_ids(directory: str | None = None, ignoring: Collection[str] = ()) -> set[str]:
    """Ids of the containers that hold an unexpired kept kernel (docker): nothing removes them
    until the kernel is swept or its TTL runs out.

    :param ignoring: kernel ids whose records do not count (being swept: a dry run lists their
        containers as the sweep would find them).
    """
    return {str(r.locator["container_id"]) for r in unexpired(directory)
            if r.locator.get("container_id") and r.kernel_id not in ignoring}


def kept_container_ids(directory: str | None = None) -> set[str]:
    """Ids of the containers a kept kernel's record names, expired or not: the leak probe's
    exemption. One whose TTL ran out during the run stays until a sweep removes it with its record,
    as after the run; the next test's check reported it as that test's leak (and removed it)."""
    try:
        records = load_all(directory)
    except UnsafeRunDirError:
        return set()
    return {str(r.locator["container_id"]) for r in records if r.locator.get("container_id")}


def stays_for_kept_kernel(container_id: str) -> bool:
    """Whether this process's kept records name ``container_id`` (unexpired): the run's last member
    leaves such a container running (logged), instead of removing or parking it."""
    if container_id not in exempt_container_ids():
        return False
    log.info("container %s holds a kernel kept for post-mortem: left running", container_id[:12])
    return True


def holds_kept_kernel(container_id: str, labels: dict[str, str], ignoring: Collection[str] = ()) -> bool:
    """Whether an unexpired kept kernel's record names ``container_id``: among this process's
    records, or those under the temp dir its :data:`~.labels.LABEL_TMPDIR` label names (checked
    as private and this user's, as every kept dir is).

    :param container_id: the container's full id.
    :param labels: its labels.
    :param ignoring: kernel ids whose records do not count (see :func:`exempt_container_ids`).
    """
    where = {None, label_path(labels, LABEL_TMPDIR)}
    return any(container_id in exempt_container_ids(directory, ignoring) for directory in where)


def time_left_words(seconds: float) -> str:
    """``ls``'s EXPIRES IN for ``seconds`` left (> 0): seconds within a day, else days, and past
    99999 days (a TTL of ``1e300`` printed 300 digits) only that it is longer than that."""
    if seconds < 86400:
        return f"{seconds:.0f} s"
    days = seconds / 86400
    if days < 99999.5:
        return f"{days:.1f} d" if days < 10 else f"{days:.0f} d"
    return "> 99999 d"
