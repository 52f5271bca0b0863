"""``serve``: start a supervisor on an inherited channel (local) or on a unix socket (remote).

Both read one JSON config object from stdin first (never argv: it may hold the token), then
put ``/dev/null`` on fd 0.

* ``serve --fd N``: the channel is the inherited socket ``N``; the host started us in our own
  session (``start_new_session=True``) and the channel's EOF is its death.
* ``serve --listen SOCK``: bind ``SOCK`` (0600), fork, print ``ready <pid>`` from the parent and
  exit 0 (the exec that started us returns at once); the child calls ``setsid`` (its pid is its
  session id), writes the pidfile, sends its fds 1 and 2 to the log (0600; ``/dev/null`` when the
  config names none) and serves until the orphan timer fires with no client attached. An exec
  that left any of fds 0-2 closed gets ``/dev/null`` there first: a socket or the log opened on
  fd 2 would be replaced by the log's ``dup2`` (the daemon died at once, silently).
"""

from __future__ import annotations

import json
import os
import socket
import sys

from .attach import bind_listener
from .frames import READ_CHUNK
from .procfs import become_subreaper, oom_counter_problem
from .supervisor import Supervisor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def read_config() -> dict[str, Any]:
    """Read stdin to EOF as the JSON config (empty: ``{}``), then put ``/dev/null`` on fd 0."""
    raw = b""
    while True:
        chunk = os.read(0, READ_CHUNK)
        if not chunk:
            break
        raw += chunk
    config = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return config


def serve_fd(fd: int) -> None:
    """Serve the host on the inherited socket ``fd`` until it goes away (a spawned runner: it
    adopts what its cells leave behind, and its ``bye`` names it)."""
    become_subreaper()
    config = read_config()
    check_cgroup(config)
    run_on_channel(config, socket.socket(fileno=fd))


def run_on_channel(config: dict[str, Any], sock: socket.socket) -> None:
    """Serve the host on the connected channel ``sock`` (the lease) until it goes away.

    Also the body of a kernel the kernel server forks (:mod:`.server`).
    """
    sup = Supervisor(config)
    sock.set_inheritable(False)
    sup.start_worker()
    sup.link.attach(sock, authenticated=True)
    sup.say_hello()
    sup.run()


def write_pidfile(config: dict[str, Any]) -> None:
    """Write this process's pid and its pid namespace (``4242 pid:[4026531836]``; the pid alone
    where ``/proc`` cannot say) into the config's ``pidfile`` (if it names one): a sweep in another
    pid namespace sharing the dir's file system reads the pid as one of its own, and removed a live
    runner's dir as "its runner is gone"."""
    if config.get("pidfile"):
        try:
            namespace = " " + os.readlink("/proc/self/ns/pid")
        except OSError:
            namespace = ""
        with open(config["pidfile"], "w", encoding="ascii") as fh:
            fh.write(f"{os.getpid()}{namespace}\n")


def _daemonize(config: dict[str, Any]) -> None:
    """Fork; the parent prints ``ready <child pid>`` and exits; the child leads a new session."""
    child = os.fork()
    if child:  # the exec that started us returns at once; the daemon lives on (pid == its sid)
        sys.stdout.write(f"ready {child}\n")
        sys.stdout.flush()
        os._exit(0)
    os.setsid()
    fd = os.open(config.get("log") or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)  # never one of 0-2 (:func:`std_fds_open`)
    if sys.stderr is None:  # Python started with fd 2 closed: its tracebacks go to the log too
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    write_pidfile(config)


#: Exit status of a runner that cannot enter its kernel's working directory (EX_SOFTWARE, as a
#: worker's own start failure).
CWD_FAILED = 70


def enter_cwd(config: dict[str, Any]) -> None:
    """Enter the config's ``cwd`` now, before the launch's exec returns, and make it absolute for
    the worker (which enters it again). Its error goes out on stderr in one line naming it, as a
    forked kernel's does: the launch fails with it, where it ended each cell's worker at its start
    (``exit_code=70``, naming nothing) behind a start that said the kernel was up.

    :raises SystemExit: (status :data:`CWD_FAILED`) if the directory cannot be entered.
    """
    cwd = config.get("cwd")
    if not cwd:
        return
    try:
        os.chdir(cwd)
        config["cwd"] = os.getcwd()
    except OSError as exc:
        sys.stderr.write(f"hermes-kernel runner: cannot enter the working directory cwd={cwd!r}: {exc.strerror}\n")
        sys.stderr.flush()
        raise SystemExit(CWD_FAILED) from None


def cgroup_problem(config: dict[str, Any]) -> str | None:
    """The line that says why the config's ``oom_counter_file`` has no ``oom_kill`` count to read, or
    its ``cgroup_procs`` cannot be joined (a file missing, not this user's to write, or a write the
    kernel refuses), else ``None``: checked before the worker starts, so the launch fails with it,
    where the worker ran outside the cgroup, without its limit, or its OOM kills read as plain
    SIGKILLs, and said nothing. A child joins it and exits: a file this user may open can still refuse
    the join itself (cgroup v2's common-ancestor rule; ``/dev/full``), which an ``open`` alone passed."""
    counter = config.get("oom_counter_file")
    if counter and (why := oom_counter_problem(counter)) is not None:  # (it said "missing" for a file it may not read)
        return (f"hermes-kernel runner: no oom_kill count in oom_counter_file={counter!r} ({why}): an OOM kill of "
                "the kernel would read as a plain SIGKILL")
    path = config.get("cgroup_procs")
    if not path:
        return None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe: joins as the worker will, says why not, and exits (nothing of it is left there)
        code = 0
        try:
            os.close(read)
            with open(path, "w", encoding="ascii") as fh:
                fh.write(str(os.getpid()))
        except OSError as exc:
            code = 1
            os.write(write, (exc.strerror or str(exc)).encode("utf-8", "replace"))
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        why = fh.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    if status == 0:
        return None
    return (f"hermes-kernel runner: the worker cannot join the cgroup cgroup_procs={path!r}: {why or 'its probe failed'}"
            " (its limit would not apply)")


def check_cgroup(config: dict[str, Any]) -> None:
    """:func:`cgroup_problem` on stderr, in one line, and exit.

    :raises SystemExit: (status :data:`CWD_FAILED`) if the cgroup cannot be joined.
    """
    problem = cgroup_problem(config)
    if problem is not None:
        sys.stderr.write(problem + "\n")
        sys.stderr.flush()
        raise SystemExit(CWD_FAILED)


def std_fds_open() -> None:
    """Put ``/dev/null`` on each of fds 0, 1 and 2 that is closed (each ``open`` takes the
    lowest free number: the first closed one)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)


def serve_listen(path: str) -> None:
    """Daemonize and serve clients that attach to the unix socket ``path``."""
    std_fds_open()
    config = read_config()
    config["listen"] = path
    enter_cwd(config)
    check_cgroup(config)
    listener = bind_listener(path)
    _daemonize(config)
    become_subreaper()  # the daemon, not the parent that exits (a fork does not inherit it)
    run_listening(config, listener)


def serve_listening_fd(fd: int) -> None:
    """Serve clients on the bound, listening socket ``fd``: a remote kernel server's forked kernel
    started afresh (:func:`.server.exec_fresh`), already in its session, with its log on fd 2."""
    become_subreaper()
    config = read_config()
    write_pidfile(config)
    run_listening(config, socket.socket(fileno=fd))


def run_listening(config: dict[str, Any], listener: socket.socket) -> None:
    """Serve clients that attach to ``listener`` until the orphan timer or shutdown ends it.

    Also the body of a kernel the remote kernel server forks (:mod:`.server_remote`).
    """
    sup = Supervisor(config)
    sup.start_worker()
    sup.link.listen(listener)
    sup.run()
