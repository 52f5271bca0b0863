"""Local kernel dirs: each made private (0700) and naming its host, and the stale-dir sweep that
removes a dead host's (the registry's reaper, ``hermes-kernel sweep kernel-dirs``), never a kept
kernel's.

A kernel dir is ``<root>/hermes-kernel-<host pid>-<random>`` (root: :func:`kernel_dir_root`). Its
:data:`HOST_FILE` names the host's pid namespace, where that pid is judged, and the host's temp
dir, under which a kept kernel's record is (:mod:`~pytest_hermes_kernel.containers.kept`): a
sweep run with another ``TMPDIR`` reads it there, and leaves the dir alone until the kernel's TTL
has run out (it removed it).

May import: the kernel core, ``containers``, ``procs`` and ``errors``.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import tempfile
import time

from ..containers.rundir import read_small_file
from ..errors import KernelStartError
from ..procs import dirs_under, pid_alive
from ..kernel.runner.renamed_trees import REMOVING_PREFIX, remove_renamed
from ..kernel.runner.trees import remove_tree
from .local_server import SERVER_DIR_PREFIX

KERNEL_DIR_ENV = "PYTEST_HERMES_KERNEL_DIR"
"""The environment variable naming the root of local kernel dirs (default: the temp dir)."""

__all__ = ["HOST_FILE", "KERNEL_DIR_PREFIX", "ROOTS_USED", "discard_kernel_dir", "kernel_dir_root", "new_kernel_dir",
           "remove_kernel_dir", "short_of", "stale_kernel_dirs", "sweep_stale_kernel_dirs"]

KERNEL_DIR_PREFIX = "hermes-kernel-"
#: In each kernel dir: ``<host pid> <host's pid namespace>``, for the stale-dir sweep, and on a
#: second line the host's temp dir, under which a kept kernel's record is (the sweep reads it there).
HOST_FILE = "runner.host"
#: Name prefixes of a kernel dir while it is made and while it is removed (no probe or sweep reads them).
_MAKING, _REMOVING = ".making-", REMOVING_PREFIX


#: Every root this process made a kernel dir under: a test may point ``TMPDIR`` (or
#: :data:`KERNEL_DIR_ENV`) elsewhere for its duration, and the leak probe, which looks after the
#: test put it back, looks under each (a dir left there passed unseen).
ROOTS_USED: set[str] = set()


def kernel_dir_root() -> str:
    """Where local kernel dirs are made: ``$PYTEST_HERMES_KERNEL_DIR`` or the temp dir; absolute (a
    relative root is taken from the working directory, as the temp dir is: the runner runs in its
    kernel dir, where a relative path to its zipapp pointed nowhere and every start failed)."""
    root = os.environ.get(KERNEL_DIR_ENV)
    return os.path.abspath(root) if root else tempfile.gettempdir()


def new_kernel_dir() -> str:
    """A new kernel dir (mode 0700, ``hermes-kernel-<host pid>-<random>``) holding only
    :data:`HOST_FILE`.

    The host pid in the name lets the leak checker tell this process's dirs apart; the host file
    names the pid namespace that pid belongs to (see :func:`_host_dead`) and the host's temp dir
    (see :func:`_host_tmpdir`).
    """
    root = kernel_dir_root()
    try:  # made under a name no probe or sweep reads, and given its own once its host file is in (below)
        kdir = tempfile.mkdtemp(prefix=f"{_MAKING}{KERNEL_DIR_PREFIX}{os.getpid()}-", dir=root)
        os.chmod(kdir, 0o700)  # mkdtemp's 0700 less the umask: under umask 0277 a dir its owner cannot write
    except OSError as exc:  # a bare FileNotFoundError traceback named neither the variable nor a fix
        where = f"${KERNEL_DIR_ENV}" if os.environ.get(KERNEL_DIR_ENV) else "the temp dir: $TMPDIR, else /tmp"
        var = KERNEL_DIR_ENV if os.environ.get(KERNEL_DIR_ENV) else "TMPDIR"
        raise KernelStartError(f"cannot make a kernel dir under {root} ({where}): {exc.strerror or exc}\n"
                               f"Hint: {short_of(exc) or f'make it, or point {var} at a writable directory'}") from None
    ROOTS_USED.add(root)
    made, kdir = kdir, os.path.join(root, os.path.basename(kdir)[len(_MAKING):])
    try:
        with open(os.path.join(made, HOST_FILE), "x", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(f"{os.getpid()} {_pid_namespace()}\n{_tmpdir_line(tempfile.gettempdir())}\n")
        os.rename(made, kdir)
    except OSError as exc:  # a full disk, no fd left: it was a bare OSError, and the dir stayed
        discard_kernel_dir(made)
        raise KernelStartError(f"cannot write the kernel dir {kdir}: {exc.strerror or exc}\nHint: "
                               + (short_of(exc) or f"point {KERNEL_DIR_ENV} at a writable directory")) from None
    except BaseException:  # a Ctrl-C as it was written: left as .making-*, no leak check saw it
        discard_kernel_dir(made)
        raise
    return kdir


def remove_kernel_dir(kdir: str) -> bool:
    """Remove kernel dir ``kdir``: renamed out of the kernel dirs' names first, so that no leak probe
    or sweep sees it half removed, its :data:`HOST_FILE` gone; renamed back where it could not all go.

    A dir seen without its host file is judged by the pid in its name alone (:func:`made_in_this_pid_namespace`):
    two runs in pid namespaces of their own sharing a temp dir are both pid 1, and one's leak check
    reported the other's kernel dir, caught as it was made or removed (docs/testing.md, 2026-12-06).

    :returns: whether it is gone.
    """
    return remove_renamed(kdir, remove_tree)


def discard_kernel_dir(kdir: str, *names: str) -> None:
    """Remove the kernel dir of a start that failed: its known files (``names`` and
    :data:`HOST_FILE`) one by one first, since ``shutil.rmtree`` needs a free fd to list a dir and
    silently leaves it when this process has none (the very failure being cleaned up)."""
    for name in (HOST_FILE, *names):
        try:
            os.unlink(os.path.join(kdir, name))
        except OSError:
            pass
    try:
        os.rmdir(kdir)
    except OSError:
        remove_tree(kdir)


def short_of(exc: OSError) -> str:
    """What this machine ran short of, when ``exc`` says so, as a hint; ``""`` otherwise."""
    if exc.errno == errno.EMFILE:
        return (f"this process has run out of file descriptors (its limit, ulimit -n, is "
                f"{resource.getrlimit(resource.RLIMIT_NOFILE)[0]}): raise it, or end kernels or files it holds")
    if exc.errno == errno.ENFILE:
        return "this machine has run out of file descriptors (fs.file-max): end processes or files that hold them"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"the file system of {kernel_dir_root()} is full: free space there, or point "
                f"{KERNEL_DIR_ENV} (else TMPDIR) at another")
    if exc.errno == errno.EFBIG:  # the hint asked whether the root was writable
        return (f"this process may write no file over {resource.getrlimit(resource.RLIMIT_FSIZE)[0]} bytes (its file "
                "size limit, ulimit -f): raise it (the kernel runner alone is about 200 KB), or `ulimit -f unlimited`")
    if exc.errno in (errno.EAGAIN, errno.ENOMEM):
        return "this machine has run out of processes or memory (ulimit -u, a pids or memory cgroup)"
    return ""


def _pid_namespace() -> str:
    """This process's pid namespace (``pid:[4026531836]``); ``""`` where ``/proc`` cannot say."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def sweep_stale_kernel_dirs(max_age_s: float, root: str | None = None) -> int:
    """Remove local kernel dirs older than ``max_age_s`` seconds or whose host pid is dead.

    Another live host may own younger dirs; symlinks are never followed.

    :returns: how many dirs were removed.
    """
    removed = 0
    for path in stale_kernel_dirs(max_age_s, root):
        if remove_kernel_dir(path):  # (a tree deeper than the recursion limit too: shutil.rmtree raised RecursionError)
            removed += 1
    return removed


def stale_kernel_dirs(max_age_s: float, root: str | None = None) -> list[str]:
    """The local kernel dirs :func:`sweep_stale_kernel_dirs` would remove (nothing is removed);
    never an unexpired kept kernel's (:mod:`~pytest_hermes_kernel.containers.kept`), nor another
    user's (not ours to judge: an ordinary user's sweep said it removed root's, which it could not).

    :param max_age_s: a dir older than this (seconds since its last change) is stale.
    :param root: where kernel dirs are made; default :func:`kernel_dir_root`.
    """
    from ..containers.kept import KeptNearby

    now = time.time()
    stale = []
    kept = KeptNearby()  # a kept kernel's dir (its socket) stays until its TTL ends
    lives: dict[str, bool] = {}  # another pid namespace's, looked at (a scan of /proc) once a sweep
    for name, path in dirs_under(root or kernel_dir_root(), KERNEL_DIR_PREFIX):
        try:
            st = os.lstat(path)
            if st.st_uid != os.getuid():
                continue
            if now - st.st_mtime > max_age_s or _host_dead(name[len(KERNEL_DIR_PREFIX):], path, lives):
                if not kept.holds_dir(path, _host_tmpdir(path)):
                    stale.append(path)
        except OSError:
            continue
    for prefix in (_MAKING + KERNEL_DIR_PREFIX, _REMOVING + KERNEL_DIR_PREFIX):  # a host ended while it made or removed one
        for _, path in dirs_under(root or kernel_dir_root(), prefix):
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if st.st_uid == os.getuid() and now - st.st_mtime > max_age_s:
                stale.append(path)
    return stale


def _tmpdir_line(tmp: str) -> str:
    """The temp dir as :data:`HOST_FILE`'s second line: as it is (an older kit reads that), or
    quoted (JSON) when it holds a newline, which cut it (a kept kernel's dir, its record not
    found under the cut path, was a stale dir to a sweep with another ``TMPDIR``)."""
    return json.dumps(tmp) if "\n" in tmp or tmp.startswith('"') else tmp


def _host_tmpdir(path: str) -> str | None:
    """The temp dir of the host that made kernel dir ``path`` (its :data:`HOST_FILE`'s second
    line): a kept kernel's record is under it. ``None`` when the file does not say (an older kit's)."""
    text = _host_file(path)
    if text is None:
        return None
    lines = text.split("\n")  # not splitlines(): a path may hold U+2028 or \x1c
    line = lines[1] if len(lines) > 1 else ""
    try:
        return json.loads(line) if line.startswith('"') else line or None
    except ValueError:
        return None


def _host_dead(rest: str, path: str, lives: dict[str, bool]) -> bool:
    """Whether a kernel dir named ``hermes-kernel-<host pid>-<random>`` (or a kernel server's,
    ``hermes-kernel-server-<host pid>-<random>``) at ``path`` belongs to a dead host.

    A pid is only dead in the pid namespace it was seen in: when the dir's :data:`HOST_FILE`
    names another namespace (a sweep run inside a container or ``unshare --pid`` that shares
    this temp dir), every host there looks dead from here, so nothing is judged (that once
    removed a parallel run's live kernel dirs, one a runner was starting from), until no process
    is in that namespace: then its host is dead, whatever its pid names here (a namespace's pytest
    is often pid 1, which always lives here: the dir stayed until it was stale).
    """
    from ..procs import namespace_lives

    pid, sep, _ = rest.removeprefix(SERVER_DIR_PREFIX[len(KERNEL_DIR_PREFIX):]).partition("-")
    if not (sep and pid.isdigit()):
        return False
    namespace = _host_namespace(path)
    if namespace and namespace != _pid_namespace():
        if namespace not in lives:
            lives[namespace] = namespace_lives(namespace)
        return not lives[namespace]
    return not pid_alive(int(pid))


def _host_namespace(path: str) -> str | None:
    """The pid namespace kernel dir ``path``'s :data:`HOST_FILE` names (``None``: it names none)."""
    text = _host_file(path)
    namespace = None if text is None else text.split("\n", 1)[0].split()[1:2]  # (the second line: the temp dir)
    return namespace[0] if namespace else None


def _host_file(path: str) -> str | None:
    """The text of kernel dir ``path``'s :data:`HOST_FILE` (``None``: none, or no regular file:
    a fifo there hung ``hermes-kernel sweep``, the reaper's stale-dir sweep and the leak probe for good)."""
    try:
        return read_small_file(os.path.join(path, HOST_FILE), 65536).decode("utf-8", "surrogateescape")
    except OSError:
        return None


def made_in_this_pid_namespace(path: str) -> bool:
    """Whether the host that made kernel dir ``path`` ran in this process's pid namespace, as its
    :data:`HOST_FILE` says; ``True`` when it does not say (a server's dir, an older kit's: the pid
    in its name alone decides). Two runs in pid namespaces of their own that share a temp dir are
    often both pid 1: the name alone made one's leak check report (and remove) the other's dir."""
    namespace = _host_namespace(path)
    return namespace is None or namespace == _pid_namespace()