"""One container per test run, shared by every transport instance and every xdist worker.

A :class:`SharedResource` is a record of what was started (``{"container_id": ...}`` plus what
joiners need, e.g. the sshd port and key file) in a JSON *state file*, next to a lock file, in
the run's private directory (:func:`~.rundir.run_dir`: ``<tmp>/pytest-hermes-kernel-<uid>/run-<run
id>/<kind>-<key>.json`` and ``.lock``; files a resource keeps beside them, such as the sshd
private key, are ``<kind>-<key>.<suffix>``). The run id also labels the run's containers.

A process belongs to one run (:func:`current_run_id`). Whoever knows the run sets it once with
:func:`use_run_id` and hands it on explicitly to the processes it starts: the pytest plugin sets
it at configure (``--hermes-run-id`` / ``PYTEST_HERMES_RUN_ID``, else the one the xdist
controller sends each worker, else a new uuid), and the host harness sends it to its host
process in the start message, so they join the same containers instead of leaving their own
behind when they are SIGKILLed. Without either it is a uuid made once per process. The run id
is never written to ``os.environ``.

The state file also lists its *members* (``pid:start-time:token``). :meth:`SharedResource.acquire`
joins (or starts the resource when there is none, or it is no longer usable);
:meth:`SharedResource.release` leaves, and the last member stops the resource, removes its files
and then the run directory once it is empty (the run's last member of its last resource: the
last xdist worker out). Members whose process is gone (a SIGKILLed worker) are dropped whenever
the file is read, so a crash does not keep the container forever; if every member crashed, the
label sweep (:func:`~pytest_hermes_kernel.containers.sweep.sweep_dead_runs`) removes the
container and :func:`discard_unheld` the files. An xdist worker also records its run's *anchor*
(:func:`use_run_anchor`: the controller, which outlives crashed workers and removes what only
they held at its end): while it lives, no other run's sweep takes the container.

The lock is an ``flock`` on the resource's lock file, held to read and write the state file and,
for the first user, to start the container. The last member removes the lock file too, while
holding it; a waiter that then gets the lock checks that its file is still the one at the path
(same inode) and retries otherwise, making the run directory again when it was removed, so no
two processes ever hold "the" lock (the classic race that makes :mod:`filelock` leave its lock
files in place) and no file is left behind per run. Reading (:meth:`SharedResource.peek`,
:meth:`SharedResource.members`) takes no lock and creates nothing: the state file is replaced
atomically.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import ConfigError, ContainerStartError, SharedLockTimeout, TransportUnavailableError
from ..procs import foreign_table, process_table
from .rundir import RUN_ID_PATTERN, read_json_file, remove_if_empty, run_dir, run_dir_path, run_files_problem

Resource = dict[str, Any]

log = logging.getLogger(__name__)
_NAME = re.compile(r"[A-Za-z0-9_-]+")

#: Starting a container (and, for the first user, building the image) happens under the lock.
LOCK_TIMEOUT = 600.0
#: A pid counts as the same process when its start time is within this of the recorded one.
START_TIME_TOLERANCE_S = 1.0
#: :func:`worker_id` outside pytest-xdist workers.
CONTROLLER = "controller"

_run_id: str | None = None
_run_id_lock = threading.Lock()
_anchor: str | None = None


def use_run_id(run_id: str | None) -> str | None:
    """Make ``run_id`` the run this process belongs to (see module docstring).

    :param run_id: letters, digits, ``_.-``, at most 128 characters; ``None`` forgets the run
        id (the next :func:`current_run_id` makes a new one).
    :returns: the run id this replaces (``None`` if there was none), so a caller can restore it.
    :raises ConfigError: if ``run_id`` is not a valid run id.
    """
    global _run_id
    if run_id is not None and not RUN_ID_PATTERN.fullmatch(run_id):
        raise ConfigError(f"a run id must be 1-128 letters, digits, '_', '.' or '-', not {run_id!r}")
    with _run_id_lock:
        previous, _run_id = _run_id, run_id
    return previous


def use_run_anchor(anchor: str | None) -> None:
    """Name the process that owns this process's run (``pid:start-time``: an xdist worker's
    controller), or ``None``. The shared resources this process joins record it, and a run's
    resource that no member holds any more (its workers crashed) stays in use, for every other
    run's sweeps, while the anchor lives: that run's controller removes it at its end (B39, B41)."""
    global _anchor
    _anchor = anchor


def process_anchor(pid: int | None = None) -> str:
    """``pid:start-time`` of ``pid`` (default: this process): an anchor for :func:`use_run_anchor`,
    and the head of a member string (start time 0 when unknown: never alive)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_process_start(pid) or 0.0:.3f}"


def refuse_unsafe_run_files(what: str) -> None:
    """Refuse a transport whose run files this user cannot keep in the temp dir (where
    ``hermes-kernel doctor`` says ``NO``): its every test errored with an ``UnsafeRunDirError``
    traceback at its kernel's start, and its leak probe warned in every later test.

    :raises TransportUnavailableError: ``what``, the reason and the hint, when they cannot be kept.
    """
    try:
        problem = run_files_problem()
    except OSError:  # (a full temp dir: the start says so, with its hint; a later run may have room)
        return
    if problem is not None:
        raise TransportUnavailableError(f"{what}: {problem[0]}. Hint: {problem[1]}")


def current_run_id() -> str:
    """The run this process belongs to: the one set by :func:`use_run_id`, else a new uuid (once)."""
    global _run_id
    with _run_id_lock:
        if _run_id is None:
            _run_id = uuid.uuid4().hex
        return _run_id


def worker_id() -> str:
    """The xdist worker id (``gw0``...) or ``controller`` outside an xdist worker."""
    return os.environ.get("PYTEST_XDIST_WORKER", CONTROLLER)


def _process_start(pid: int) -> float | None:
    from ..procs import start_time

    return start_time(pid)


def member_alive(member: str) -> bool:
    """Whether a member string (``pid:start-time:token``, :attr:`SharedResource.member`) names a live process."""
    pid, _, rest = member.partition(":")
    started, _, _token = rest.partition(":")
    try:
        from ..procs import same_start

        return same_start(_process_start(int(pid)), float(started), START_TIME_TOLERANCE_S)
    except ValueError:
        return False


class SharedResource:
    """A run-wide resource of one ``kind`` and option ``key`` (see module docstring).

    :param kind: what it is (``docker``, ``sshd``); part of the file names.
    :param key: a short digest of the options that make the resource (image, limits).
    :param run_id: the run; default :func:`current_run_id`.
    :param directory: the temp dir the run's directory is made in (default: the temp dir).
    :raises ConfigError: if the run id cannot name a directory, or ``kind``/``key`` hold anything
        but letters, digits, ``_`` and ``-`` (a file's name up to its first dot is its resource).
    """

    def __init__(self, kind: str, key: str, *, run_id: str | None = None, directory: str | None = None) -> None:
        if not _NAME.fullmatch(f"{kind}-{key}"):
            raise ConfigError(f"a shared resource's kind and key must be letters, digits, '_' or '-', "
                              f"not {kind!r}, {key!r}")
        self.run_id = run_id or current_run_id()
        self._directory = directory
        self.run_dir = run_dir_path(self.run_id, directory)
        self._stem = os.path.join(self.run_dir, f"{kind}-{key}")
        self.kind = kind
        self.lock_path = self._stem + ".lock"
        self.state_path = self._stem + ".json"
        self.member = f"{process_anchor()}:{uuid.uuid4().hex[:8]}"
        self.joined = False

    def side_file(self, suffix: str) -> str:
        """The path of a file the resource keeps next to its state (``suffix``: e.g. ``key``).

        It goes with the state file: when the last member leaves (:meth:`release`) or a sweep
        finds nobody holds the resource (:func:`discard_unheld`).
        """
        return f"{self._stem}.{suffix}"

    def acquire(self, start: Callable[[], Resource], usable: Callable[[Resource], bool],
                discard: Callable[[Resource], None]) -> Resource:
        """Join the run's resource, starting it when there is none or it is not ``usable``.

        :param start: makes a new resource and returns its record (runs under the lock).
        :param usable: whether a recorded resource still works (e.g. its container runs).
        :param discard: removes a recorded resource that is no longer usable.
        :returns: the resource record.
        :raises SharedLockTimeout: if the lock is held for more than :data:`LOCK_TIMEOUT` s.
        :raises UnsafeRunDirError: if the run's directory cannot be trusted (see :mod:`.rundir`).
        :raises ContainerStartError: if this member cannot be recorded (a full disk); a resource
            no other live member holds is then discarded, not left running unrecorded.
        """
        with self._lock():
            state = self._read()
            resource = state.get("resource")
            if resource and not usable(resource):
                discard(resource)
                resource = None
            fresh = not resource
            if not resource:
                try:
                    resource = start()
                except BaseException:  # also a timeout or Ctrl-C raised inside the start (B40)
                    if not state["members"]:  # nobody else uses it: no files of it stay behind
                        self._remove_files()
                    raise
            others = [m for m in state["members"] if m != self.member]
            members = [*others, self.member]
            try:
                self._write({"resource": resource, "members": members, "anchor": state["anchor"] or _anchor})
            except OSError as exc:  # a full disk: a bare OSError, and the sshd key stayed after the run
                if fresh or not others:  # nobody else holds it: unrecorded, it would outlive the run
                    discard(resource)
                if not others:
                    self._remove_files()
                raise ContainerStartError(f"cannot record the run's {self.kind} container in {self.state_path}: "
                                          f"{run_file_error(exc)}") from None
            self.joined = True
            return resource

    def release(self, stop: Callable[[Resource], None]) -> bool:
        """Leave; the last live member calls ``stop`` and removes the state, side and lock
        files, then the run directory if nothing else is left in it.

        :returns: ``True`` when this call stopped the resource.
        """
        if not self.joined:
            return False
        self.joined = False
        with self._lock():
            state = self._read()
            members = [m for m in state["members"] if m != self.member]
            resource = state.get("resource")
            if members:
                self._write({"resource": resource, "members": members, "anchor": state["anchor"]})
                return False
            try:
                if resource:
                    stop(resource)
            finally:
                self._remove_files()
        return True

    def _remove_files(self) -> None:
        """Remove the state, side and lock files (the lock file last, still held: waiters see
        the inode change and retry), then the run directory if nothing else is left in it."""
        for path in _files_of(self._stem):
            _unlink(path)
        remove_if_empty(self.run_dir)  # other resources of the run keep it

    def peek(self) -> Resource | None:
        """The recorded resource without joining it (``None`` when there is none)."""
        return self._read()["resource"]

    def members(self) -> list[str]:
        """Live members recorded now (diagnostics and tests)."""
        return self._read()["members"]

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return locked_file(self.lock_path, LOCK_TIMEOUT, make_dir=lambda: run_dir(self.run_id, self._directory))

    def _read(self) -> dict[str, Any]:
        try:
            state = read_json_file(self.state_path)
        except (OSError, ValueError):
            state = {}
        state = state if isinstance(state, dict) else {}  # (a damaged file: as none)
        members = state.get("members")
        members = [m for m in members if isinstance(m, str) and member_alive(m)] if isinstance(members, list) else []
        anchor = state.get("anchor")
        return {"resource": state.get("resource"), "members": members,
                "anchor": anchor if isinstance(anchor, str) else None}

    def _write(self, state: dict[str, Any]) -> None:
        tmp = f"{self.state_path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({**state, "table": process_table()}, fh)  # the process table its pids are of
            os.replace(tmp, self.state_path)
        except BaseException:
            _unlink(tmp)
            raise


def run_file_error(exc: OSError) -> str:
    """Why a run file could not be written, with a hint for a full disk."""
    text = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        text += ("\nHint: the file system of the temp dir is full: free space there, or point TMPDIR at another "
                 "(the run's files are small: its shared containers' state and the sshd key)")
    return text


def held(state_path: str, *, anchor: bool = True) -> bool:
    """Whether a live process is a member of the shared resource recorded at ``state_path``, or
    (with ``anchor``) its run's anchor lives (:func:`use_run_anchor`).

    Members are checked by pid and start time (a reused pid is not a member); those recorded in
    another pid namespace (its ``table``: a run in a container beside this one) are not judged
    here: held (an earlier boot's, or a namespace that ended: not held). A missing or
    unreadable state file holds nothing; one this user may not read (another user's run) counts
    as held: it is not ours to judge.

    :param anchor: count the anchor: what another run's sweep asks; the run's own checks (its
        leak probe, its controller's end-of-run removal) pass ``False``.
    """
    try:
        state = read_json_file(state_path)
        members, run_anchor = state.get("members", []), state.get("anchor") if anchor else None
    except PermissionError:
        return True
    except (OSError, ValueError, AttributeError):
        return False
    table = foreign_table(state.get("table"))
    if table:  # pids of another live pid namespace (a run in a container beside this one): not judged here
        return table == "namespace"
    if isinstance(run_anchor, str) and member_alive(run_anchor):
        return True
    return isinstance(members, list) and any(isinstance(m, str) and member_alive(m) for m in members)


def discard_unheld(state_path: str, *, dry_run: bool = False, anchor: bool = True) -> list[str] | None:
    """Remove the files of a shared resource that no live process holds (sweeps call this).

    Its files are the state file, the lock file and the side files (:meth:`SharedResource.side_file`:
    the sshd private key; a temp file of a writer that crashed). The resource's lock is tried,
    not waited for: whoever holds it is alive and inside. The lock file is removed last, while
    held, as :meth:`SharedResource.release` does.

    :param state_path: ``<run dir>/<kind>-<key>.json``.
    :param dry_run: only list the files; nothing is created or removed.
    :param anchor: count the run's anchor as holding it (see :func:`held`).
    :returns: the paths removed (or that would be); ``None`` when a live process holds it.
    """
    stem = state_path[:-len(".json")] if state_path.endswith(".json") else state_path
    with _locked_now(stem + ".lock", create=not dry_run) as got:
        if not got or held(state_path, anchor=anchor):
            return None
        files = _files_of(stem)
        if not dry_run:
            for path in files:
                _unlink(path)
        return files


def _files_of(stem: str) -> list[str]:
    """``<stem>.*`` in the stem's directory, the lock file last."""
    directory, name = os.path.split(stem)
    try:
        names = sorted(n for n in os.listdir(directory) if n.split(".", 1)[0] == name)
    except OSError:
        return []
    names.sort(key=lambda n: n == f"{name}.lock")
    return [os.path.join(directory, n) for n in names]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a directory someone put there: left as it is
        log.warning("could not remove %s: %s", path, exc)


@contextlib.contextmanager
def locked_file(path: str, timeout: float, make_dir: Callable[[], object]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created 0600), robust to the file being unlinked.

    :param make_dir: makes (or checks) the directory of ``path``; called before every attempt,
        so a directory is trusted only once checked, and made again when the run's last member
        removed it while we waited.
    :raises SharedLockTimeout: if it is not obtained within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        make_dir()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:
            continue  # removed between the check and the open
        got = flock_current(fd, path)
        if got:
            break
        os.close(fd)
        if got is None and time.monotonic() >= deadline:
            raise SharedLockTimeout(f"{path} was held by another process for more than {timeout:g} s. "
                                    "Hint: is a container start stuck in another pytest process?",
                                    path=path, timeout=timeout) from None
        if got is None:
            time.sleep(0.02)
    try:
        yield
    finally:
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def _locked_now(path: str, *, create: bool) -> Iterator[bool]:
    """Try the lock once: yields ``True`` when held now (or there is no lock file and
    ``create`` is false: nobody is inside), ``False`` when another process holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | (os.O_CREAT if create else 0), 0o600)
    except FileNotFoundError:
        yield True
        return
    except OSError:  # a symlink, or not ours: not ours to judge
        yield False
        return
    try:
        yield bool(flock_current(fd, path))
    finally:
        os.close(fd)


def flock_current(fd: int, path: str) -> bool | None:
    """``flock`` ``fd`` without waiting: ``True`` when locked and still the file at ``path``,
    ``False`` when the file was replaced meanwhile (lock the new one), ``None`` when busy."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False  # the last user removed it while we waited
