"""What the ssh transport shows the leak checker, and how it cleans what leaked.

Listed through the transport's own connection (nothing is connected for this before the first
connection: there is nothing to list; a connection that died is made again, and a host that does
not answer raises, which the leak check reports as not checked): its open channels, the kernel processes of a host on
the ssh host (scanned there, so a real remote host is covered: by the kernel server there
when one runs, else by an exec), and the run's sshd containers
that no live process holds, and the kernel dirs this process made there that are still there.
"""

from __future__ import annotations

import logging
import posixpath
import shlex
import time
from typing import TYPE_CHECKING, Any

from ...containers.kept import exempt_kernel_ids
from ...containers.lifecycle import OOM_KILLS_SH, memory_limit_words
from ...errors import TransportLostError
from ..detached import (HOST_PROCESSES_SCRIPT, KERNEL_PROCESSES_SCRIPT, KILL_IF_SAME_SCRIPT,
                        KILL_KERNEL_SCRIPT, LOG_NAME, LOG_TAIL_LINES, REAP_SCRIPT, SIGNAL_SCRIPT, SOCKET_NAME, SSH_KERNEL_ROOT,
                        disk_free_sh, disk_words, log_tail_sh, parse_existing_dirs,
                        parse_host_processes, parse_kernel_processes)
from ..forked import forked_alive, forked_frozen, forked_reap, reap_in_one_exec
from ..reattach import LISTENING_SCRIPT, check_listening
from ..runner_identity import alive_probe  # (the transport's _alive_on: probes.alive_probe)
from ..remote_server import runner_stopped, stat_says_stopped
from ..server_pool import probe_by_server
from .address import runs_no_command

if TYPE_CHECKING:
    from ...kernel.contract import Launched
    from ..remote_server import RemoteServer
    from .connection import SshConnection
    from .transport import SshTransport

log = logging.getLogger(__name__)

#: Seconds a probe's command on the ssh host may take.
PROBE_TIMEOUT = 15.0

def check_listening_on(transport: SshTransport, conn: SshConnection, launched: Launched) -> None:
    """Before a re-attach's relay: the runner's socket is there (:mod:`..reattach`).

    :raises TransportLostError: (``permanent``) if it is gone; as the connection does.
    """
    sock = f"{launched.kernel_dir or ''}/{SOCKET_NAME}"
    looked = transport.run_script(conn, LISTENING_SCRIPT, sock, python=launched.extra.get("python"))
    check_listening(*looked, sock, f"pid {launched.pid} on {conn.target}")


def snapshot(transport: SshTransport, host_pid: int) -> dict[str, dict[str, str]]:
    """``{kind: {identity: description}}`` (see :meth:`Transport.leak_snapshot`)."""
    found: dict[str, dict[str, str]] = {"ssh channel": {}, "remote kernel process": {}, "remote kernel dir": {}}
    conn = transport.current_connection
    if not transport.closed and ((conn is None and transport.connected_once) or (conn is not None and not conn.usable)):
        # kernels made through a connection that died may still run there: connect again to look
        # (a silent host: one short try now and then, else TransportLostError at once, not a
        # connect timeout in every test's check)
        conn = transport._connection(probe=True)
    if conn is not None:
        for chan_id, command in conn.open_channels().items():
            found["ssh channel"][f"{id(conn)}:{chan_id}"] = f"ssh channel {chan_id} to {conn.target}: {command}"
        where = str(conn.target)
        dirs, left = transport.made_dirs.of(where), transport.left.of(where)
        out = _scan(transport, conn, where, [str(host_pid), *dirs, *left])
        kept = exempt_kernel_ids()  # kernels kept for post-mortem outlive their host on purpose: not leaks
        rows = parse_host_processes(out)
        transport.left.seen(where, left, rows)
        for pid, start, kernel_id, cmd in rows:
            if kernel_id in kept:
                continue
            found["remote kernel process"][f"ssh:{pid}:{start}:{kernel_id}"] = \
                f"pid {pid} on {conn.target} (kernel {kernel_id}): {cmd}"
        existing = parse_existing_dirs(out)
        transport.made_dirs.seen(where, dirs, existing)
        found["remote kernel dir"].update({f"ssh:{d}": f"kernel dir {d} on {where}" for d in existing})
    if transport.sshd is not None:
        from ...containers.sweep import unused_run_containers

        found["container"] = unused_run_containers(transport.sshd.docker, transport.run_id)
    return found


def _scan(transport: SshTransport, conn: SshConnection, where: str, args: list[str]) -> bytes:
    """The host-process scan's output on the ssh host: run by the kernel server there when one
    runs (a fork, no ssh exec: most snapshots), else by an exec; both as the login user."""
    out = probe_by_server(transport.servers, where, HOST_PROCESSES_SCRIPT, args,
                          frozen=lambda server: server_stopped(conn, server))
    if out is not None:
        return out
    code, out = transport.run_script(conn, HOST_PROCESSES_SCRIPT, *args)  # (a kernel's python= where the transport's
    # is not on the host: every snapshot failed 'exit status 127')
    return _completed(code, out, f"the kernel scan on {where}")


def _completed(code: int | None, out: bytes, what: str) -> bytes:
    """A scan's output, read as a fact only when the scan ended well (read as is, a failed scan
    is a host with no kernel on it).

    :raises TransportLostError: if it exited non-zero or its exit status is unknown.
    """
    if code != 0:
        raise TransportLostError(f"{what} failed (exit status {code}); output: {out[-300:]!r}")
    return out


def cleanup(transport: SshTransport, kind: str, identity: str) -> None:
    """End one reported thing: close the channel, kill the process (if still the same one),
    remove the container. Never raises."""
    try:
        conn = transport.current_connection
        if kind == "ssh channel" and conn is not None and identity.startswith(f"{id(conn)}:"):
            conn.close_channel(int(identity.rsplit(":", 1)[1]))
        elif kind == "remote kernel process" and conn is not None:
            _, pid, start, _kernel = identity.split(":")
            transport.run_script(conn, KILL_IF_SAME_SCRIPT, pid, start)
        elif kind == "remote kernel dir" and conn is not None:
            remove_kernel_dir(conn, identity.split(":", 1)[1])
        elif kind == "container" and transport.sshd is not None:
            from ...containers.lifecycle import remove_container

            remove_container(identity, client=transport.sshd.docker)
    except Exception as exc:  # noqa: BLE001 - cleanup never raises
        log.warning("could not clean leaked %s %s: %s", kind, identity, exc)


def kernel_processes(transport: SshTransport, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
    """Live processes of kernel ``kernel_id`` on the ssh host, scanned there (by the kernel
    server there when one runs, as the leak snapshot's scan is; else by an exec). None when the
    host does not answer and the kept kernel's ``locator`` names a run's sshd container that is
    gone (:func:`sshd_container_gone`).

    :raises TransportLostError: if the host cannot be reached, or the scan fails or does not finish
        within :data:`PROBE_TIMEOUT` (an empty list would read as "nothing of the kernel is left").
    """
    conn = transport.current_connection
    if locator and locator.get("target"):  # (a kept kernel's: its python= may be the only one there)
        transport.scripts.add(str(locator["target"]), locator.get("python"))
    if conn is not None and conn.usable:  # by the host's kernel server when one runs: no ssh exec
        out = probe_by_server(transport.servers, str(conn.target), KERNEL_PROCESSES_SCRIPT, [kernel_id],
                              frozen=lambda server: server_stopped(conn, server))
        if out is not None:
            return parse_kernel_processes(out)
    try:
        code, out = transport.run_probe(KERNEL_PROCESSES_SCRIPT, kernel_id)
    except TransportLostError:
        if sshd_container_gone(locator):
            return []
        raise
    except TimeoutError:
        raise TransportLostError(f"the scan for kernel {kernel_id}'s processes on the ssh host did not "
                                 f"finish within {PROBE_TIMEOUT:g} s", timed_out=True) from None
    return parse_kernel_processes(_completed(code, out, f"the scan for kernel {kernel_id}'s processes on the ssh host"))


def reap(transport: SshTransport, launched: Launched, timeout: float) -> bool:
    """``Transport.reap``: a forked runner's exit as its server saw it; else one exec that waits
    for the runner to end and then removes its kernel dir (:data:`REAP_SCRIPT`: no separate probe,
    kill and ``rm``, ~150 ms less per shutdown on the spawn path); True when it is gone."""
    if forked_reap(launched, timeout):
        return True
    if launched.pid is None or forked_alive(launched) is not None:
        return transport.seen_gone(launched)
    kdir = launched.kernel_dir or ""
    dirs = [kdir] if f"/{SSH_KERNEL_ROOT}/" in kdir else []
    python = launched.extra.get("python")
    try:
        return reap_in_one_exec(launched, timeout, dirs,
                                lambda *args: transport.run_probe(REAP_SCRIPT, *args, python=python)[1])
    except (TransportLostError, TimeoutError):
        return False  # not confirmed: the caller kills it from outside


def remove_kernel_dir(conn: SshConnection, kdir: str) -> None:
    """``rm -rf`` a kernel dir on the ssh host (nothing but a kernel dir); failures are logged."""
    try:
        rm_kernel_dir(conn, kdir)
    except (TransportLostError, TimeoutError) as exc:
        log.warning("could not remove %s over ssh: %s", kdir, exc)


def rm_kernel_dir(conn: SshConnection, kdir: str) -> bool:
    """``rm -rf`` a kernel dir on the ssh host (nothing but a kernel dir).

    :returns: whether it is gone; ``False`` (logged) when ``rm`` failed (a cell left a read-only
        subdir holding files in it) or ``kdir`` is no kernel dir: the leak check still looks for it.
    :raises TransportLostError: if the host cannot be reached.
    :raises TimeoutError: if the ``rm`` did not end within :data:`PROBE_TIMEOUT`.
    """
    if f"/{SSH_KERNEL_ROOT}/" not in kdir:
        return False
    status, _, err = conn.run(f"rm -rf {shlex.quote(kdir)}", timeout=PROBE_TIMEOUT)
    if status != 0 and sftp_rmtree(conn, kdir):  # a host that runs no command (an sftp-only login) takes SFTP's
        return True
    if status != 0:
        log.warning("could not remove %s over ssh (exit status %s): %s", kdir, status,
                    err.decode(errors="replace").strip()[:300])
    return status == 0


def sftp_rmtree(conn: SshConnection, path: str) -> bool:
    """Remove ``path`` and what is in it over SFTP, never following a symlink (``path`` itself neither:
    a kernel dir a cell swapped for one had the link's target emptied); whether it is gone."""
    import stat

    try:
        sftp = conn.sftp()
    except TransportLostError:
        return False

    def rm(at: str, mode: int) -> None:  # (lstat's mode: a symlink is no dir, only unlinked)
        if not stat.S_ISDIR(mode):
            sftp.remove(at)
            return
        for entry in sftp.listdir_attr(at):
            rm(f"{at}/{entry.filename}", entry.st_mode or 0)
        sftp.rmdir(at)

    try:
        rm(path, sftp.lstat(path).st_mode or 0)
        return True
    except OSError:
        return False
    finally:
        sftp.close()


def end_failed_launch(transport: SshTransport, conn: SshConnection, kdir: str, kernel_id: str,
                      python: str | None = None) -> None:
    """A launch failed: end every process it may have started (found by the kernel id in
    their environment: the runner's pid may never have been reported), then its dir.

    :param python: the interpreter the launch started the kernel (or its server) with.
    """
    end_kernel(transport, conn, kdir, kernel_id, "failed launch", python)


def end_kernel(transport: SshTransport, conn: SshConnection, kdir: str, kernel_id: str, what: str,
               python: str | None = None) -> None:
    """End every process of kernel ``kernel_id`` on the ssh host (found by the kernel id in their
    environment), then remove ``kdir``; failures are logged, naming ``what`` was ended.

    :param python: the kernel's interpreter, if known: when it is the transport's and that is
        not on the host (exit status 127), nothing of the kernel can have started (logged at DEBUG).
    """
    try:
        # the transport's python: the kernel's interpreter may be what failed
        code, out = transport.run_script(conn, KILL_KERNEL_SCRIPT, kernel_id)
        if code == 127 and python in (None, transport.python) and what == "failed launch":
            log.debug("kernel %s on %s (%s): %r is not on the host: nothing of it can have started",
                      kernel_id, conn.target, what, transport.python)
        elif what == "failed launch" and not {b"gone", b"left"} & set(out.split()) and runs_no_command(conn.run)[0]:
            log.debug("kernel %s on %s (%s): the kill script did not run there (%r): nor can the kernel have",
                      kernel_id, conn.target, what, out[-200:])  # a host that runs no command (an sftp-only login;
            # one that ran the echo ran the script too, which crashed: warned of below)
        elif code != 0 or out.strip() != b"gone":
            log.warning("kernel %s on %s (%s): could not end all its processes: %r",
                        kernel_id, conn.target, what, out[-200:])
    except (TransportLostError, TimeoutError) as exc:
        log.warning("kernel %s on %s (%s): could not end its processes: %s", kernel_id, conn.target, what, exc)
    remove_kernel_dir(conn, kdir)


def runner_log(transport: SshTransport, launched: Launched, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of the kernel runner's log on the ssh host (``""`` if unreachable),
    the host's disk when it is (all but) full (a runner that died of it could write no log), and,
    in the kit's sshd container under ``mem_limit_bytes``, its OOM kills when it counts any (a
    runner the OOM killer ended at its start said only "end of stream", as docker's did)."""
    root = posixpath.dirname(launched.kernel_dir or "") or "."
    sshd = transport.sshd
    limit = sshd.mem_limit_bytes if sshd is not None else None
    oom = f"; echo {_OOM_KILLS} $({OOM_KILLS_SH})" if limit else ""
    try:
        _, out, _ = transport.connection().run(
            f"({log_tail_sh(f'{launched.kernel_dir}/{LOG_NAME}', lines)}); {disk_free_sh(root)}{oom}", timeout=PROBE_TIMEOUT)
    except (TransportLostError, TimeoutError):
        return ""
    said, _, kills = out.decode("utf-8", "replace").rstrip().rpartition(_OOM_KILLS) if limit else (
        out.decode("utf-8", "replace"), "", "")
    text, disk = disk_words(said.rstrip(), root, "the ssh host's disk",
                            "Hint: free space there (or the login user's quota), then run again")
    memory = memory_limit_words(kills, limit, shared=not sshd.fresh_key) if sshd is not None and limit else ""
    return "\n".join(filter(None, [text, disk, memory]))


#: What begins the line of the sshd container's OOM kills in :func:`runner_log`'s output.
_OOM_KILLS = "HERMES-OOM-KILLS"


def signal_pid(transport: SshTransport, launched: Launched | None, pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid`` on the ssh host.

    :raises ProcessLookupError: if no such process runs there (or it is not ours).
    """
    code, _ = transport.run_probe(SIGNAL_SCRIPT, str(pid), str(int(sig)))
    if code != 0:
        raise ProcessLookupError(f"no process {pid} of ours on the ssh host")


def server_stopped(conn: SshConnection, server: RemoteServer) -> bool:
    """Whether the host's kernel server is stopped (SIGSTOP, a debugger): it answers nothing until
    continued; a start waited ``SPAWN_TIMEOUT_S`` (15 s) for it, a scan ``PROBE_TIMEOUT_S`` (12 s).
    Never raises."""
    try:
        code, out, _ = conn.run(f"cat /proc/{int(server.pid or 0)}/stat", timeout=2.0)
    except Exception:  # noqa: BLE001 - cannot tell: not seen stopped
        return False
    return server.pid is not None and code == 0 and stat_says_stopped(out)


def frozen(transport: SshTransport, launched: Launched) -> bool:
    """``Transport.frozen``: whether the runner is stopped on the ssh host (SIGSTOP, a debugger: its
    shutdown waited 10 s for nothing). Not when it cannot tell, nor asked of a host whose
    keepalives went unanswered lately (silent: each look would wait for the connection)."""
    conn = launched.extra.get("conn")
    if conn is None or launched.pid is None or not conn.usable \
            or time.monotonic() - conn.last_reply > 2 * conn.keepalive_interval:
        return False
    return runner_stopped(lambda: conn.run(f"cat /proc/{int(launched.pid or 0)}/stat", timeout=2.0)) \
        or forked_frozen(launched)


def sshd_container_gone(locator: dict[str, Any] | None) -> bool:
    """Whether the run's sshd container a kept kernel's locator names is gone from the environment's
    engine, or stopped (removed by hand, or by the sweep of a kit before 2026-12-02, which misreads
    this kit's labels): its kernel went with it. ``False`` when none is named or the engine cannot say."""
    cid = (locator or {}).get("container_id")
    if not isinstance(cid, str) or not cid:
        return False
    try:
        import docker

        client = docker.from_env(timeout=10)
    except Exception:  # noqa: BLE001 - no SDK or no engine: cannot tell
        return False
    try:
        return client.api.inspect_container(cid)["State"]["Status"] in ("exited", "dead")
    except docker.errors.NotFound:
        return True
    except Exception:  # noqa: BLE001 - cannot tell
        return False
    finally:
        client.close()
