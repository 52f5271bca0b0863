"""Sweeps: remove the containers and run files of runs nobody uses any more, and nothing else.

Only containers labelled by :mod:`.labels` are looked at (:func:`in_use` decides), and only
run directories of this user (:func:`~.rundir.run_dirs`; a shared resource's files go when no
live process holds it, :func:`~.sharing.discard_unheld`). A session sweeps once, at its first
use of docker (:func:`sweep_once_per_process`), never its own run's; ``hermes-kernel sweep``
runs the same sweeps, and with ``--dry-run`` only lists what they would remove.

Containers kept between runs (``--hermes-reuse``, :mod:`.reuse`) are judged by their record in
the reuse store instead: left alone while claimed or parked and unexpired, removed when expired
or when their image name points at another image now; ``hermes-kernel sweep --reused`` removes
every unclaimed one of this user's store.

A container that holds an unexpired kernel kept for post-mortem (``--hermes-keep-failed``, a
record of :mod:`.kept` names it) is left alone by every sweep and by the leak probe; once its
kernels are swept (``hermes-kernel sweep --kept``: :func:`sweep_kept_containers`) or their TTL
ran out, it goes like any dead run's container.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import tempfile
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from .kept import exempt_container_ids, holds_kept_kernel, kept_container_ids
from ..procs import foreign_table
from .labels import (LABEL, LABEL_HOST_PID, LABEL_HOSTNAME, LABEL_PROCESS_TABLE, LABEL_REUSE, LABEL_ROLE, LABEL_RUN_ID,
                     LABEL_STATE_FILE, creator_uid, host_is_gone, label_path)
from .lifecycle import remove_container
from .reuse import Verdict, removable, store_of, verdict
from .rundir import is_run_file, remove_if_empty, reuse_dir, run_dir_path, run_dirs
from .sharing import _locked_now, discard_unheld, held

if TYPE_CHECKING:
    import docker

__all__ = ["in_use", "sweep_containers_of_kept", "sweep_dead_run_files", "sweep_dead_runs", "sweep_kept_containers",
           "sweep_once_per_process", "unused_run_containers"]


def sweep_dead_runs(client: docker.DockerClient | None = None, *, keep_run_id: str | None = None,
                    dry_run: bool = False, reused: bool = False, raced: list[str] | None = None) -> list[str]:
    """Remove containers nobody uses any more (see :func:`in_use`; reusable ones: module docstring).

    Only containers labelled ``org.hermes-kernel=1`` and made on this hostname are looked at.
    A removed shared container's run files go with it (its sshd key included), when they are
    this user's.

    :param client: docker-py client; ``None`` opens one from the environment.
    :param keep_run_id: never remove this run's containers (its creator may have exited while
        another xdist worker of the run still uses a shared one).
    :param dry_run: only find them; nothing is removed.
    :param reused: also remove the unclaimed containers parked in this user's reuse store.
    :param raced: gets the id of each container to remove that another process removed first
        (gone when asked, or its removal already in progress: another sweep of the same dead run).
    :returns: ids of the containers removed (or that would be).
    """
    return _remove_labelled(client, lambda c, cid, labels: not holds_kept_kernel(cid, labels) and _goes(
        c, cid, labels, keep_run_id=keep_run_id, dry_run=dry_run, reused=reused), dry_run=dry_run, raced=raced)


def _remove_labelled(client: docker.DockerClient | None,
                     goes: Callable[[docker.DockerClient, str, dict[str, str]], bool], *, dry_run: bool,
                     anchor: bool = True, raced: list[str] | None = None) -> list[str]:
    """Remove the kit's labelled containers for which ``goes(client, id, labels)`` holds, and
    their run files; ids of those removed (or that would be, with ``dry_run``).

    :param anchor: a run's live anchor holds its run files (:func:`~.sharing.held`); ``False``
        for the anchor's own end-of-run removal (:func:`sweep_run_unheld`).
    :param raced: gets the ids of those another process removed first (see :func:`sweep_dead_runs`).
    """
    import docker

    owned = client is None
    client = docker.from_env() if client is None else client
    removed: list[str] = []
    try:
        for summary in client.api.containers(all=True, filters={"label": f"{LABEL}=1"}):
            labels = summary.get("Labels") or {}
            if not goes(client, summary["Id"], labels):
                continue
            if dry_run or remove_container(summary["Id"], client=client):
                removed.append(summary["Id"])
                if not dry_run:
                    _discard_files_of(labels, anchor=anchor)
            elif raced is not None:  # its files are the other sweep's to discard, once it has removed it
                raced.append(summary["Id"])
    finally:
        if owned:
            client.close()
    return removed


def _goes(client: docker.DockerClient, container_id: str, labels: dict[str, str], *, keep_run_id: str | None,
          dry_run: bool, reused: bool) -> bool:
    """Whether a sweep removes this container (a reusable one's record is deleted here when it does)."""
    if labels.get(LABEL) != "1" or labels.get(LABEL_HOSTNAME) != socket.gethostname():
        return False
    if creator_uid(labels) not in (None, os.getuid()):
        return False  # another user's: its kept kernels and records are out of this user's sight
    if labels.get(LABEL_REUSE) == "1":
        found = _reuse_verdict(client, container_id, labels, dry_run=dry_run, reused=reused)
        if found != "unknown":
            return found in ("expired", "stale")
    return not ((keep_run_id is not None and labels.get(LABEL_RUN_ID) == keep_run_id) or in_use(labels))


def _reuse_verdict(client: docker.DockerClient, container_id: str, labels: dict[str, str], *, dry_run: bool,
                   reused: bool) -> Verdict:
    return removable(container_id, labels, reused=reused, current_store=reuse_dir(create=False),
                     image_id_now=_image_ids(client), dry_run=dry_run)


def _image_ids(client: docker.DockerClient) -> Callable[[str], str | None]:
    """``name -> image id now`` (``None``: no such image), each name asked once."""
    import docker

    seen: dict[str, str | None] = {}

    def image_id(name: str) -> str | None:
        if name not in seen:
            try:
                seen[name] = str(client.images.get(name).id)
            except docker.errors.ImageNotFound:
                seen[name] = None
        return seen[name]

    return image_id


def _discard_files_of(labels: dict[str, str], *, anchor: bool = True) -> None:
    """The run files of a container just removed (a label is not proof a path is ours: checked)."""
    state_file = label_path(labels, LABEL_STATE_FILE)
    if state_file and is_run_file(state_file):
        discard_unheld(state_file, anchor=anchor)
        remove_if_empty(os.path.dirname(state_file))


def sweep_dead_run_files(directory: str | None = None, *, keep_run_id: str | None = None,
                         dry_run: bool = False) -> list[str]:
    """Remove the run files that no live process holds, and run directories left empty.

    Each shared resource of a run directory is judged on its own (:func:`~.sharing.discard_unheld`:
    its members by pid and start time, its lock tried): a live run's resources stay, a dead
    resource's files (its private key included) go even while the run's others are in use.

    :param directory: the temp dir (default: :func:`tempfile.gettempdir`).
    :param keep_run_id: never touch this run's directory.
    :param dry_run: only list them; nothing is removed.
    :returns: the files and directories removed (or that would be), directories after their files.
    """
    removed: list[str] = []
    for run_id, path in run_dirs(directory):
        if run_id != keep_run_id:
            removed += _sweep_run_dir(path, dry_run)
    return removed + _sweep_flat_run_files(directory, dry_run)


#: A shared container's files as kits before 2026-12-01 (6bd26ba) wrote them, flat in the temp dir:
#: ``pytest-hermes-kernel-<run id>-<kind>-<key>`` + ``.json`` (state; ``.json.<pid>.tmp`` while
#: written) and ``.lock``, and the sshd container's private key ``<that>-<container id[:12]>.key``.
_FLAT_STEM = r"pytest-hermes-kernel-[A-Za-z0-9_-]+-(?:docker|sshd)-[A-Za-z0-9_-]+"
_FLAT_FILE = re.compile(rf"({_FLAT_STEM})\.(?:json|lock|json\.\d+\.tmp)")
_FLAT_KEY = re.compile(rf"({_FLAT_STEM})-[0-9a-f]{{12}}\.key")


def _sweep_flat_run_files(directory: str | None, dry_run: bool) -> list[str]:
    """An older kit's run files (:data:`_FLAT_FILE`, :data:`_FLAT_KEY`) of this user that no live
    member holds (its members are wall-clock start times: :func:`~..procs.same_start`) and whose
    lock is free: a SIGKILLed run of it left them, its sshd private key too, and the per-user run
    dirs' sweep never looked there. The lock file goes last, while held."""
    root = directory or tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return []
    stems: dict[str, list[str]] = {}
    for name in sorted(names):
        found = _FLAT_FILE.fullmatch(name) or _FLAT_KEY.fullmatch(name)
        try:
            st = os.lstat(os.path.join(root, name))
        except OSError:
            continue
        if found and stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
            stems.setdefault(found.group(1), []).append(os.path.join(root, name))
    removed: list[str] = []
    for stem, paths in stems.items():
        lock = os.path.join(root, f"{stem}.lock")
        with _locked_now(lock, create=False) as free:
            if not free or held(os.path.join(root, f"{stem}.json"), anchor=False):
                continue
            paths.sort(key=lambda path: path == lock)
            for path in paths:
                if not dry_run:
                    try:
                        os.unlink(path)
                    except OSError:
                        continue
                removed.append(path)
    return removed


def sweep_run_files_unheld(run_id: str, directory: str | None = None) -> list[str]:
    """Remove the run's own files that no live member holds, its live anchor not counted (see
    :func:`sweep_run_unheld`): what the xdist controller removes at the end of a run in which
    workers crashed, those of the containers it leaves (``--hermes-reuse``) included.

    :returns: the files and directory removed.
    """
    return _sweep_run_dir(run_dir_path(run_id, directory), dry_run=False, anchor=False)


def _sweep_run_dir(path: str, dry_run: bool, anchor: bool = True) -> list[str]:
    try:
        stems = sorted({name.split(".", 1)[0] for name in os.listdir(path)})
    except OSError:
        return []
    removed: list[str] = []
    live = False
    for stem in stems:
        files = discard_unheld(os.path.join(path, f"{stem}.json"), dry_run=dry_run, anchor=anchor)
        live = live or files is None
        removed += files or []
    if (dry_run and not live) or (not dry_run and remove_if_empty(path)):
        removed.append(path)
    return removed


def in_use(labels: dict[str, str], *, anchor: bool = True) -> bool:
    """Whether a labelled container is still used by a live process of any run.

    A shared container (it names its state file, :data:`~.labels.LABEL_STATE_FILE`) is in use
    while any member recorded there lives, each checked by pid and start time, whoever created
    it (the creator may be a SIGKILLed host or an xdist worker that finished first), or while its
    run's anchor lives (the xdist controller of workers that crashed: it removes the container at
    the end of its run; ``anchor=False`` is that removal's own question). Any other
    container, and a shared one whose state file is not written yet, is in use while its
    creating host lives (:func:`~.labels.host_is_gone`). One whose state file this user may not
    look at is another user's run's: in use.
    Containers of other hostnames, unlabelled ones and those made in another pid namespace that
    still lives (:data:`~.labels.LABEL_PROCESS_TABLE`: a run in a container beside this one, whose
    pids are not this namespace's) always count as in use: never ours to judge.

    :param labels: the container's labels.
    """
    if labels.get(LABEL) != "1" or labels.get(LABEL_HOSTNAME) != socket.gethostname():
        return True
    if foreign_table(labels.get(LABEL_PROCESS_TABLE)) == "namespace":
        return True  # made in another live pid namespace (a run in a container beside this one): its pids are not ours
    state_file = label_path(labels, LABEL_STATE_FILE)
    if state_file:
        try:
            os.stat(state_file)
        except PermissionError:  # another user's run dir (exists() said False): not ours to judge
            return True
        except OSError:
            pass
        else:
            return held(state_file, anchor=anchor)
    # no state file yet: the first member starts the container before it records itself there
    # (a concurrent sweep in that window must not remove it), so its creator decides
    return not host_is_gone(labels)


def unused_run_containers(client: docker.DockerClient, run_id: str) -> dict[str, str]:
    """Containers this process made for the run that nobody uses: ``{id: description}`` (leak probe).

    Only this process's own (by its host pid label, in this process table: two runs in pid
    namespaces of their own given one ``--hermes-run-id`` are both pid 1, and one's check reported
    and removed the other's live container): another xdist worker's fresh container is in use by
    that worker's test, and a shared one is judged by its members.

    :param client: docker-py client of the engine the run's containers are on.
    :param run_id: the run's id label.
    """
    found = {}
    kept = kept_container_ids()  # outlive the run on purpose, with their kept kernels (expired too): not leaks
    mine = {"label": [f"{LABEL_RUN_ID}={run_id}", f"{LABEL_HOST_PID}={os.getpid()}"]}
    for summary in client.api.containers(all=True, filters=mine):
        labels = summary.get("Labels") or {}
        if summary["Id"] in kept or foreign_table(labels.get(LABEL_PROCESS_TABLE)):
            continue  # a kept one; or another pid namespace's process of the same pid and run id
        if labels.get(LABEL_REUSE) == "1" and _kept_for_reuse(summary["Id"], labels):
            continue  # kept between runs on purpose (claimed, or parked and unexpired): not a leak
        state_file = label_path(labels, LABEL_STATE_FILE)
        if not state_file or not held(state_file, anchor=False):
            role = labels.get(LABEL_ROLE, "?")
            found[summary["Id"]] = (f"container {summary['Id'][:12]} ({role}, {summary.get('State', '?')}); "
                                    "no live process holds it")
    return found


def sweep_run_unheld(run_id: str, client: docker.DockerClient | None = None) -> list[str]:
    """Remove the run's own containers that no live process holds (:func:`in_use`), and their run
    files: what the xdist controller does at the end of a run in which workers crashed, since a
    worker that crashed never left the shared containers it alone held. Containers kept between
    runs (``--hermes-reuse``) or holding a kept kernel stay.

    :param run_id: the run's id label; no other run's container is looked at.
    :param client: docker-py client; ``None`` opens one from the environment.
    :returns: ids of the containers removed.
    """
    return _remove_labelled(client, lambda _c, cid, labels: labels.get(LABEL_RUN_ID) == run_id and labels.get(
        LABEL_REUSE) != "1" and not holds_kept_kernel(cid, labels) and not in_use(labels, anchor=False), dry_run=False,
        anchor=False)


def sweep_kept_containers(container_ids: Collection[str], client: docker.DockerClient | None = None, *,
                          dry_run: bool = False, swept: Collection[str] = ()) -> list[str]:
    """Remove the containers that held kept kernels just swept (``hermes-kernel sweep --kept``),
    each only when no unexpired kept kernel is left in it, it is labelled as made on this hostname
    and no live process of any run uses it (:func:`in_use`); never by name. A container kept
    between runs (``--hermes-reuse``) that its record says is claimed or parked stays: its labels
    name the run that made it, not the one that claimed it since.

    :param container_ids: full ids, from the swept kernels' records.
    :param client: docker-py client; ``None`` opens one from the environment.
    :param dry_run: only find them; nothing is removed.
    :param swept: ids of the kept kernels being swept (in a dry run their records are still there).
    :returns: ids of the containers removed (or that would be).
    """
    wanted = set(container_ids) - exempt_container_ids(ignoring=swept)
    if not wanted:
        return []
    return _remove_labelled(client, lambda _c, cid, labels: cid in wanted and not holds_kept_kernel(
        cid, labels, swept) and not in_use(labels) and not (labels.get(LABEL_REUSE) == "1" and _kept_for_reuse(
            cid, labels)), dry_run=dry_run)


def sweep_containers_of_kept(container_ids: set[str], swept: list[str], progress: Callable[[str], None],
                              dry_run: bool, engine: str | None = None) -> None:
    """Remove the containers that held the swept kept kernels, once none of their kernels is kept
    (:func:`sweep_kept_containers` on the engine they were kept on), a line each to ``progress``;
    without an engine, one line saying so (the next sweep removes them)."""
    if not container_ids:
        return
    from .engines import engine_client

    try:
        client = engine_client(engine)  # the engine the kernels were kept on
        try:
            gone = sweep_kept_containers(container_ids, client, dry_run=dry_run, swept=swept)
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - no engine: the next sweep removes them
        progress(f"containers of kept kernels: skipped ({type(exc).__name__}: {exc})")
        return
    for cid in gone:
        progress(f"{'would remove' if dry_run else 'removed'} container {cid[:12]} (no kept kernel is left in it)")


def _kept_for_reuse(container_id: str, labels: dict[str, str]) -> bool:
    store = store_of(labels)
    record = None if store is None else next((r for r in store.records() if r["container_id"] == container_id), None)
    return record is not None and verdict(record, lambda _name: record.get("image_id")) in ("claimed", "parked")


_swept_engines: set[str] = set()


def sweep_once_per_process(client: docker.DockerClient, run_id: str) -> None:
    """At a session's first use of each docker engine: remove that engine's containers of dead runs
    (never this run's), and (at the first of them) the run files of dead runs."""
    from .engines import engine_url

    engine = engine_url(client)
    if engine in _swept_engines:
        return
    first = not _swept_engines
    _swept_engines.add(engine)
    try:
        sweep_dead_runs(client, keep_run_id=run_id)
        if first:
            sweep_dead_run_files(keep_run_id=run_id)
    except Exception:  # noqa: BLE001 - a failed sweep must not stop the run; `hermes-kernel sweep` retries
        pass
