"""Containers kept between runs (``--hermes-reuse``): their records, claims, parking and expiry.

With reuse on, a run's shared kernel host container (and its sshd container) is made with the
labels :data:`~.labels.LABEL_REUSE`, :data:`~.labels.LABEL_REUSE_KEY` (a digest of what shapes
it: role, image name and id, limits, network, user: :class:`ReuseSpec`),
:data:`~.labels.LABEL_IMAGE_ID` and :data:`~.labels.LABEL_REUSE_STORE`, and recorded in the
*reuse store*: one 0600 JSON file per container, ``<cid>.json``, in the per-user 0700 directory
:func:`~.rundir.reuse_dir` (an sshd container's private key beside it, ``<cid>.key``). When the
run's last member leaves, the container is *parked* (:meth:`ReuseStore.park`) instead of
removed; the next run with reuse on and the same :attr:`ReuseSpec.key` *claims* it
(:meth:`ReuseStore.claim`) and uses it instead of starting one.

A record's ``claim`` names the claiming run (its id, its shared resource's state file and the
claiming process as a member string): the claim holds while that process or any member of that
state file lives (:meth:`Claimant.live`), so xdist workers of one run share the container and a
run whose processes all died frees it. A claimed container is never handed to another run: a
second run at the same time starts its own (also reusable) container; nobody waits.

Claims, parking and removals run under an ``flock`` on the store's lock file
(:func:`~.sharing.locked_file`); a record is deleted *before* its container is removed, so no
claim can find a container on its way out. A parked container expires ``idle_timeout`` seconds
(wall clock) after it was last claimed or parked, and one whose image name now points at another
image id is stale: the sweep removes both (:func:`removable`), never a claimed one. Whoever
claims a container first clears it (the ``ready`` callback: the transport ends every process
carrying the kit's kernel marker and empties the kernel root), so no kernel of an earlier run
is ever left in a container handed out.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import UnsafeRunDirError
from .labels import LABEL_IMAGE_ID, LABEL_REUSE, LABEL_REUSE_KEY, LABEL_REUSE_STORE, Role, label_path
from .rundir import is_private_dir, read_json_file, reuse_dir
from .sharing import held, locked_file, member_alive

__all__ = ["DEFAULT_REUSE_IDLE_TIMEOUT_S", "Claimant", "ReusePolicy", "ReuseSpec", "ReuseStore", "Verdict",
           "claim_or_start", "claimed_by_run", "park_or_remove", "removable", "store_of"]

Resource = dict[str, Any]
log = logging.getLogger(__name__)
#: What the sweep makes of a reusable container (:func:`verdict`).
Verdict = Literal["claimed", "parked", "expired", "stale", "unknown"]

#: A parked container lives this long unused (issue 12: warm containers, 1 h by default).
DEFAULT_REUSE_IDLE_TIMEOUT_S = 3600.0
LOCK_NAME = "store.lock"
#: Claims and parks take milliseconds; a holder stuck longer is a bug, reported by the timeout.
STORE_LOCK_TIMEOUT = 60.0


@dataclass(frozen=True)
class ReusePolicy:
    """Reuse is on for a transport: how long its parked containers wait, and where their store is.

    :param idle_timeout: seconds a parked container waits unused before a sweep removes it;
        ``None``: until ``hermes-kernel sweep --reused``.
    :param directory: the temp dir the per-user directory is in (``None``: :func:`tempfile.gettempdir`).
    """

    idle_timeout: float | None = DEFAULT_REUSE_IDLE_TIMEOUT_S
    directory: str | None = None


@dataclass(frozen=True)
class ReuseSpec:
    """What makes a container reusable by a run: same role, image (name and id) and shape.

    :param role: kernel host or sshd.
    :param image: image name.
    :param image_id: the image's id (a content hash): a rebuilt image never gets an old container.
    :param shape: the options the container was made with (limits, network, user) as text pairs.
    """

    role: Role
    image: str
    image_id: str
    shape: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        return hashlib.sha256(repr((self.role, self.image, self.image_id, self.shape)).encode()).hexdigest()[:16]

    def labels(self, store: str) -> dict[str, str]:
        """The labels of a new reusable container recorded in ``store``."""
        return {LABEL_REUSE: "1", LABEL_REUSE_KEY: self.key, LABEL_IMAGE_ID: self.image_id, LABEL_REUSE_STORE: store}


@dataclass(frozen=True)
class Claimant:
    """A run claiming a container: its id, its shared resource's state file, the claiming process.

    :param member: the claiming process as :attr:`~.sharing.SharedResource.member` writes it.
    """

    run_id: str
    state_file: str
    member: str

    def live(self) -> bool:
        """Whether the claim still holds: the claiming process or a member of the run's resource lives."""
        return member_alive(self.member) or held(self.state_file)

    @classmethod
    def of(cls, record: dict[str, Any]) -> Claimant | None:
        claim = record.get("claim")
        if not isinstance(claim, dict):
            return None
        try:
            return cls(str(claim["run_id"]), str(claim["state_file"]), str(claim["member"]))
        except KeyError:
            return None


class ReuseStore:
    """The reuse store of this user (see module docstring).

    :param directory: the temp dir the per-user directory is in; ``None``: the temp dir.
    :param path: an existing store directory instead (one a container label names; see :func:`store_of`).
    """

    def __init__(self, directory: str | None = None, *, path: str | None = None) -> None:
        self._directory = directory
        self.path = path or reuse_dir(directory, create=False)
        self._lock_path = os.path.join(self.path, LOCK_NAME)

    def key_file(self, container_id: str) -> str:
        """Where a reusable sshd container's private key is kept (0600, removed with its record)."""
        return os.path.join(self.path, f"{container_id}.key")

    def claim(self, spec: ReuseSpec, claimant: Claimant, *, ready: Callable[[str], bool],
              remove: Callable[[str], None]) -> Resource | None:
        """Claim the warmest parked container made for ``spec``, cleared by ``ready``. A container
        that holds an unexpired kernel kept for post-mortem (``--hermes-keep-failed``) is never
        claimed: clearing it killed that kernel.

        :param ready: checks a claimed container runs and ends what an earlier run left in it;
            a container it refuses is removed (``remove``) with its record, and the next one tried.
        :returns: the recorded resource (``{"container_id": ..., ...}``), or ``None``: start one.
        """
        from .kept import exempt_container_ids  # here: the plugin loads this module at every pytest start

        while True:
            with self._locked() as records:
                kept = exempt_container_ids(self._directory)
                free = [r for r in records if r.get("key") == spec.key and _free(r) and not _expired(r)
                        and r["container_id"] not in kept]
                if not free:
                    self._remove_if_empty(records)
                    return None
                record = max(free, key=lambda r: r.get("touched_at", 0.0))
                self._write(dict(record, claim=_claim_dict(claimant), touched_at=time.time()))
            cid = record["container_id"]
            try:
                ok = ready(cid)
            except Exception as exc:  # noqa: BLE001 - an engine error on one container: try the next
                log.warning("a kept container %s could not be checked: %s", cid[:12], exc)
                ok = False
            if ok:
                return dict(record["resource"])
            self.forget(cid)
            remove(cid)

    def add(self, container_id: str, spec: ReuseSpec, claimant: Claimant, resource: Resource,
            idle_timeout: float | None, *, secret: str | None = None) -> None:
        """Record a reusable container just started for ``claimant`` (claimed by it).

        :param secret: a private key to keep as :meth:`key_file` (0600), written under the lock.
        """
        with self._locked():
            if secret is not None:
                fd = os.open(self.key_file(container_id), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "w", encoding="ascii") as fh:
                    fh.write(secret)
            self._write({"container_id": container_id, "role": spec.role, "key": spec.key, "image": spec.image,
                         "image_id": spec.image_id, "resource": resource, "claim": _claim_dict(claimant),
                         "touched_at": time.time(), "idle_timeout": idle_timeout})

    def park(self, container_id: str, idle_timeout: float | None) -> bool:
        """The run is done with the container: keep it for the next run (unclaimed, its idle
        expiry starting now).

        :param idle_timeout: seconds it may wait unused (``None``: until ``sweep --reused``).
        :returns: ``False`` when it has no record (a sweep took it): the caller removes it.
        """
        with self._locked() as records:
            record = next((r for r in records if r["container_id"] == container_id), None)
            if record is None:
                return False
            self._write(dict(record, claim=None, touched_at=time.time(), idle_timeout=idle_timeout))
            return True

    def forget(self, container_id: str) -> None:
        """Delete a container's record and key file (before the container is removed)."""
        with self._locked() as records:
            self._drop(container_id, records)

    def take(self, container_id: str, *, reused: bool, image_id_now: Callable[[str], str | None],
             dry_run: bool = False) -> Verdict | None:
        """For a sweep: judge a recorded container and, when it may go, delete its record (under
        the lock: no claim finds it any more). ``None``: there is no record here.

        :param reused: ``hermes-kernel sweep --reused``: every unclaimed one goes.
        :param dry_run: judge only; nothing is deleted.
        :returns: the verdict; ``expired``/``stale``/``parked`` (with ``reused``) mean: remove it now.
        """
        try:
            with self._locked(create=False) as records:
                record = next((r for r in records if r["container_id"] == container_id), None)
                if record is None:
                    return None
                found = verdict(record, image_id_now)
                if not dry_run and (found in ("expired", "stale") or (reused and found == "parked")):
                    self._drop(container_id, records)
                return found
        except UnsafeRunDirError:  # a labelled store gone (or not ours) meanwhile: nothing to judge there
            return None

    def records(self) -> list[dict[str, Any]]:
        """Every record (diagnostics, tests); no lock: files are replaced atomically."""
        return _read_all(self.path)

    @contextlib.contextmanager
    def _locked(self, *, create: bool = True) -> Iterator[list[dict[str, Any]]]:
        make_dir = (lambda: reuse_dir(self._directory)) if create and self._is_own() else self._check
        with locked_file(self._lock_path, STORE_LOCK_TIMEOUT, make_dir=make_dir):
            yield _read_all(self.path)

    def _is_own(self) -> bool:
        return self.path == reuse_dir(self._directory, create=False)

    def _check(self) -> None:
        """A store a label names is used only while it is a private directory of this user.

        :raises UnsafeRunDirError: if it is not (or is gone).
        """
        if not is_private_dir(self.path):
            raise UnsafeRunDirError(f"the reuse store {self.path} is gone or not private", path=self.path,
                                    problem="gone or not private")

    def _write(self, record: dict[str, Any]) -> None:
        path = os.path.join(self.path, f"{record['container_id']}.json")
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)

    def _drop(self, container_id: str, records: list[dict[str, Any]]) -> None:
        """Under the lock: remove a record and its key; the last record takes the store with it."""
        for path in (os.path.join(self.path, f"{container_id}.json"), self.key_file(container_id)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._remove_if_empty([r for r in records if r["container_id"] != container_id])

    def _remove_if_empty(self, records: list[dict[str, Any]]) -> None:
        """Under the lock: with no record left, remove the lock file (still held: waiters see it
        change and retry) and the store directory: a store leaves nothing behind."""
        if not records and not _others_in(self.path):
            with contextlib.suppress(OSError):
                os.unlink(self._lock_path)
                os.rmdir(self.path)


def verdict(record: dict[str, Any], image_id_now: Callable[[str], str | None]) -> Verdict:
    """``claimed`` (a live run uses it), ``stale`` (its image name points elsewhere now),
    ``expired`` (parked longer than its idle timeout) or ``parked``."""
    if not _free(record):
        return "claimed"
    if image_id_now(str(record.get("image", ""))) != record.get("image_id"):
        return "stale"
    return "expired" if _expired(record) else "parked"


def store_of(labels: dict[str, str]) -> ReuseStore | None:
    """The store a reusable container's labels name, when it is a private directory of this user."""
    path = (label_path(labels, LABEL_REUSE_STORE) or "") if labels.get(LABEL_REUSE) == "1" else ""
    if not path or os.path.basename(path) != "reuse" or not is_private_dir(path):
        return None
    return ReuseStore(path=path)


def removable(container_id: str, labels: dict[str, str], *, reused: bool, current_store: str,
              image_id_now: Callable[[str], str | None], dry_run: bool = False) -> Verdict:
    """A sweep's verdict on a reusable container (deleting its record when it goes, see
    :meth:`ReuseStore.take`); ``unknown`` when it has no record: judge it as any container.

    :param reused: ``sweep --reused``: every unclaimed one *of the current store* goes (another
        temp dir's store is another setup's: only expiry and staleness apply there).
    :param dry_run: judge only; no record is deleted.
    """
    store = store_of(labels)
    if store is None:
        return "unknown"
    reused = reused and store.path == current_store
    found = store.take(container_id, reused=reused, image_id_now=image_id_now, dry_run=dry_run)
    if found == "parked" and reused:
        return "expired"  # sweep --reused: a parked container of this store goes like an expired one
    return found or "unknown"


def claimed_by_run(container_id: str, labels: dict[str, str], run_id: str) -> bool:
    """Whether a reusable container's record names run ``run_id`` as its claimant (its labels name
    the run that made it, which a claimed container's run no longer is)."""
    store = store_of(labels)
    record = None if store is None else next((r for r in store.records() if r["container_id"] == container_id), None)
    claimant = None if record is None else Claimant.of(record)
    return claimant is not None and claimant.run_id == run_id


def claim_or_start(store: ReuseStore, spec: ReuseSpec, claimant: Claimant, policy: ReusePolicy, *,
                   start: Callable[[dict[str, str]], tuple[Resource, str | None]], ready: Callable[[str], bool],
                   remove: Callable[[str], None]) -> Resource:
    """A shared resource's ``start`` with reuse on: claim a parked container for ``spec``, else
    start a reusable one (``start(labels) -> (record, private key or None)``) and record it.

    :returns: the resource record, with ``reuse: True`` (its last user parks it) and, for a
        claimed one, ``reused: True``.
    """
    found = store.claim(spec, claimant, ready=ready, remove=remove)
    if found is not None:
        return {**found, "reuse": True, "reused": True}
    resource, secret = start(spec.labels(store.path))
    try:
        store.add(resource["container_id"], spec, claimant, resource, policy.idle_timeout, secret=secret)
    except BaseException:
        remove(resource["container_id"])
        raise
    return {**resource, "reuse": True}


def park_or_remove(store: ReuseStore, resource: Resource, policy: ReusePolicy, remove: Callable[[str], None]) -> None:
    """A shared resource's ``stop``: park a reusable container (see :meth:`ReuseStore.park`), remove any other."""
    if not (resource.get("reuse") and store.park(resource["container_id"], policy.idle_timeout)):
        remove(resource["container_id"])


def _claim_dict(claimant: Claimant) -> dict[str, str]:
    return {"run_id": claimant.run_id, "state_file": claimant.state_file, "member": claimant.member}


def _free(record: dict[str, Any]) -> bool:
    claimant = Claimant.of(record)
    return claimant is None or not claimant.live()


def _expired(record: dict[str, Any]) -> bool:
    timeout = record.get("idle_timeout")
    return timeout is not None and time.time() > float(record.get("touched_at", 0.0)) + float(timeout)


def _read_all(path: str) -> list[dict[str, Any]]:
    records = []
    try:
        names = sorted(n for n in os.listdir(path) if n.endswith(".json"))
    except OSError:
        return []
    for name in names:
        try:
            record = read_json_file(os.path.join(path, name))
        except (OSError, ValueError):
            continue
        if _well_formed(record):
            records.append(record)
    return records


def _well_formed(record: object) -> bool:
    """Whether ``record`` has the shape :meth:`ReuseStore.add` writes: one of another (hand-written,
    damaged) ended a sweep in ``ValueError: could not convert string to float`` (an ``idle_timeout``
    of ``"x"``), and one whose container id is a path (``../x``) had its record written outside the store."""
    def number(value: object) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    return (isinstance(record, dict) and isinstance(record.get("container_id"), str)
            and re.fullmatch(r"[\w-][\w.-]*", record["container_id"]) is not None
            and number(record.get("touched_at", 0.0)) and (record.get("idle_timeout") is None or number(record["idle_timeout"]))
            and isinstance(record.get("resource", {}), dict) and isinstance(record.get("claim") or {}, dict))


def _others_in(path: str) -> bool:
    """Whether the store holds anything but its lock file and records (a key of a record being written)."""
    try:
        return any(n != LOCK_NAME and not n.endswith(".json") for n in os.listdir(path))
    except OSError:
        return False
