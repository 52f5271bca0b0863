"""Labels on everything a run creates in docker, and who counts as that run's live host.

Every container the kit makes carries ``org.hermes-kernel=1`` plus the run id, the worker id,
the host pid, the host process's start time, the hostname and its role; a sweep removes a
container only when these labels say its host is gone (:func:`host_is_gone`).
"""

from __future__ import annotations

import os
import re
import socket
from typing import Literal

from ..procs import foreign_table, process_table, same_start, start_time

__all__ = ["LABEL", "LABEL_RUN_ID", "LABEL_WORKER_ID", "LABEL_HOST_PID", "LABEL_HOST_START",
           "LABEL_HOSTNAME", "LABEL_ROLE", "LABEL_STATE_FILE", "LABEL_REUSE", "LABEL_REUSE_KEY", "LABEL_IMAGE_ID",
           "LABEL_REUSE_STORE", "LABEL_TMPDIR", "LABEL_UID", "LABEL_PROCESS_TABLE", "Role", "creator_uid", "run_labels",
           "host_is_gone", "label_path"]

Role = Literal["docker-kernel-host", "sshd"]

LABEL = "org.hermes-kernel"
LABEL_RUN_ID = "org.hermes-kernel.run-id"
LABEL_WORKER_ID = "org.hermes-kernel.worker-id"
LABEL_HOST_PID = "org.hermes-kernel.host-pid"
LABEL_HOST_START = "org.hermes-kernel.host-start"
LABEL_HOSTNAME = "org.hermes-kernel.hostname"
LABEL_ROLE = "org.hermes-kernel.role"
#: A container shared through a :class:`~.sharing.SharedResource` names its state file: it is in
#: use while any member recorded there lives (whoever created it).
LABEL_STATE_FILE = "org.hermes-kernel.state-file"
#: A random token per container start: a start cut short (a timeout, Ctrl-C) finds by it the
#: container the engine made before the call could return its id.
LABEL_START_TOKEN = "org.hermes-kernel.start-token"
#: ``1`` on a container made to be kept between runs (``--hermes-reuse``, :mod:`.reuse`); such a
#: container is judged by its record in the reuse store, not by its creator's labels.
LABEL_REUSE = "org.hermes-kernel.reuse"
#: Digest of what shapes a reusable container (role, image and its id, limits, network, user).
LABEL_REUSE_KEY = "org.hermes-kernel.reuse-key"
#: The image id (a content hash) a reusable container was made from: a changed image is not reused.
LABEL_IMAGE_ID = "org.hermes-kernel.image-id"
#: The reuse store directory that holds a reusable container's record (:func:`~.rundir.reuse_dir`).
LABEL_REUSE_STORE = "org.hermes-kernel.reuse-store"
#: The temp dir of the process that made a kernel host container: the records of kernels kept in
#: it for post-mortem are under it (:func:`~.rundir.kept_dir`), so a sweep run with another
#: ``TMPDIR`` still finds them (:func:`~.kept.holds_kept_kernel`).
LABEL_TMPDIR = "org.hermes-kernel.tmpdir"
#: The uid of the process that made the container: a sweep judges only its own user's (another
#: user's kept kernels, reuse records and run files are out of its sight).
LABEL_UID = "org.hermes-kernel.uid"
#: The process table (boot id and pid namespace, :func:`~..procs.process_table`) the host pid label
#: is a pid of: a run in another pid namespace on the same hostname (a CI job in a container with
#: the host's network, ``unshare --pid``) is never judged by pids read here.
LABEL_PROCESS_TABLE = "org.hermes-kernel.process-table"
#: A per-user directory in a path a label names (a state file, a reuse store): its uid.
_USER_DIR_UID = re.compile(r"/pytest-hermes-kernel-(\d+)/")
#: A host pid whose process started more than this many seconds away from the label is reused.
HOST_START_TOLERANCE_S = 1.0


def run_labels(
    *, run_id: str, worker_id: str, role: Role, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Labels for a container made by this process (the host).

    :param run_id: id of the test run (shared by all xdist workers of one run).
    :param worker_id: xdist worker id (``gw0``...) or ``controller`` (not an xdist worker).
    :param role: what the container is for.
    :param extra: more labels; they cannot override the ones above.
    :returns: the label dict.
    """
    own = {
        LABEL: "1",
        LABEL_RUN_ID: run_id,
        LABEL_WORKER_ID: worker_id,
        LABEL_HOST_PID: str(os.getpid()),
        LABEL_HOST_START: f"{start_time(os.getpid()) or 0.0:.3f}",
        LABEL_HOSTNAME: socket.gethostname(),
        LABEL_ROLE: role,
        LABEL_UID: str(os.getuid()),
        LABEL_PROCESS_TABLE: process_table(),
    }
    return {**{name: _label_text(value) for name, value in (extra or {}).items()}, **own}


def _label_text(value: str) -> str:
    """A label value as the engine keeps it: a path's bytes as UTF-8. A host whose file system
    encoding is ASCII (``LC_ALL=C`` with ``PYTHONUTF8=0``) holds ``/tmp/\u00fc`` as surrogates,
    which the engine turned into U+FFFD: its state file label named no file, and the leak check
    called the run's live shared container a leak after every test."""
    try:
        return os.fsencode(value).decode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # not a name of this host's (a character it has no byte for): as it is
        return value


def label_path(labels: dict[str, str], name: str) -> str | None:
    """The path label ``name`` of ``labels`` as this host's ``os`` functions take it (``None``: none)."""
    value = labels.get(name)
    return os.fsdecode(value.encode("utf-8", "surrogateescape")) if value else None


def creator_uid(labels: dict[str, str]) -> int | None:
    """The uid of the user whose process made a labelled container: its :data:`LABEL_UID`, or
    (an older kit's container) the uid its state file's or reuse store's path names; ``None``
    when nothing says."""
    uid = labels.get(LABEL_UID, "")
    if uid.isdigit():
        return int(uid)
    for path in (labels.get(LABEL_STATE_FILE, ""), labels.get(LABEL_REUSE_STORE, "")):
        found = _USER_DIR_UID.search(path + "/")
        if found:
            return int(found.group(1))
    return None


def host_is_gone(labels: dict[str, str]) -> bool:
    """Whether the host that made a labelled container is gone (on this machine).

    A host counts as alive when its pid exists *and* that process started when the label says
    (within :data:`HOST_START_TOLERANCE_S`), so a reused pid does not keep a dead run's
    containers. Containers of other hostnames, unlabelled ones, unreadable processes and hosts in
    another live pid namespace (:data:`LABEL_PROCESS_TABLE`) are never judged gone; a host of an
    earlier boot, or of a pid namespace that ended (a container's run), always is.

    :param labels: the container's labels.
    """
    import psutil

    if labels.get(LABEL) != "1" or labels.get(LABEL_HOSTNAME) != socket.gethostname():
        return False
    table = foreign_table(labels.get(LABEL_PROCESS_TABLE))
    if table:  # another live pid namespace's pid is not one of ours (its live run was judged gone)
        return table == "gone"
    try:
        pid = int(labels[LABEL_HOST_PID])
        started = float(labels[LABEL_HOST_START])
    except (KeyError, ValueError):
        return False  # not made by start_* here: never ours to judge
    try:
        now = start_time(pid)
    except psutil.Error:
        return False  # exists but unreadable (another user): keep
    return not same_start(now, started, HOST_START_TOLERANCE_S)  # an older kit's label: wall clock
