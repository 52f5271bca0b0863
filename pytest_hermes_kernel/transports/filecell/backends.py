"""Execute-only backends: the one primitive the ``filecell`` transport needs, and two references.

:class:`ExecuteBackend` is a public extension point. An environment that can only run a shell
command to completion and hand back its exit code and output (a sandbox API, a CI runner, a
remote-exec service: the seed system's ``env.execute``) gets persistent kernels by wrapping
that call in an object with one method and passing it to
:class:`~pytest_hermes_kernel.transports.filecell.FileCellTransport`::

    class MySandbox:
        def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
            r = sandbox_api.run(cmd, timeout=timeout)
            return r.returncode, r.output

    transport = FileCellTransport(MySandbox())

The far side needs a POSIX ``sh``, ``base64``, ``od`` and ``python3``; the kernel runner and
its client are shipped through the command text. Commands may run concurrently (an interrupt
is delivered while a long poll runs).

Two reference backends: :class:`LocalShellBackend` (``sh`` on this machine, the command on its
stdin so no ``ps`` shows it; the default)
and :class:`DockerExecBackend` (``docker exec`` into a container).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ...errors import ExitStatusUnknownError
from ...containers.engines import close_exec_socket, is_full_container_id
from .shell_io import SCRIPT_PATH, kill_group, read_until_closed, read_until_exit, script_fd

if TYPE_CHECKING:
    from docker.models.containers import Container

#: Exit status a backend returns when it ended a command at its timeout (as coreutils ``timeout``).
TIMEOUT_EXIT = 124

#: Live subreapers of every :class:`LocalShellBackend`. They belong to the process, not to a
#: backend: each outlives the backend that started it until its kernel has ended, and is waited
#: for (collected) by a later call of any backend instead of being dropped unwaited.
_SUBREAPERS: list[subprocess.Popen[bytes]] = []
_SUBREAPERS_LOCK = threading.Lock()
#: How the reference backends run a command: the shell reads it from its stdin (then stdin is
#: ``/dev/null``), so the command text, which carries the kernel's config, is in no argv that
#: ``ps`` shows (B43).
STDIN_SHIM = 's=$(cat); exec </dev/null; eval "$s"'


@runtime_checkable
class ExecuteBackend(Protocol):
    """Runs one shell command to completion where the kernels live.

    ``execute(cmd, timeout)`` runs ``cmd`` with a POSIX shell (``sh -c cmd``), with stdin closed
    or ``/dev/null``, waits for it and returns ``(exit_code, output)``: the combined stdout and
    stderr as text. ``exit_code`` is the shell's convention, 0..255, a death by signal N being
    128 + N; a backend that does not know the status raises (the transport refuses ``None``,
    negative numbers and numbers over 255 as unknown, never as success: handed case B35).
    ``timeout`` is in seconds (``None``: no limit); on timeout the backend ends the command and
    raises :class:`TimeoutError` or returns exit code 124. Any other exception means the command
    may or may not have run (the transport then treats the kernel as unreachable).

    ``cmd`` is in no process's argv (it carries the kernel's ``env``: handed case B43): hand it to
    the shell on its stdin or in a file, never as ``sh -c cmd``.

    ``execute`` returns once the command has exited and its output is drained; a background
    process that still holds the output must not keep it open (handed case B36). Background
    processes the command starts (the kernel runner daemonizes) must keep running after
    ``execute`` returns.
    """

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]: ...


class LocalShellBackend:
    """``sh`` on this machine, ``cmd`` its script, on its stdin (never in an argv: a memfd it runs
    as ``sh /dev/fd/0``, :func:`~.shell_io.script_fd`; where there is none, a pipe read by
    :data:`STDIN_SHIM`): the default backend of ``filecell`` and the model for others.

    :param shell: the POSIX shell to run commands with.
    :param env: environment of the commands; ``None`` is this process's environment.

    The command runs in its own session, with stdin ``/dev/null``, and its whole process group is
    killed at the timeout. It returns once the command has exited and its output went quiet
    (:data:`~.shell_io.DRAIN_IDLE_S`, :data:`~.shell_io.DRAIN_MAX_S` at most): a background process that inherited the
    output keeps running (the protocol's rule for background processes) but cannot hold the call
    open; what it writes later is not part of the result. A death by signal N is 128 + N.
    The launch command (the one that leaves the kernel runner behind) runs under a small
    subreaper (:meth:`execute_detached`) that reaps the runner when it ends: on hosts whose
    init does not reap orphans (some VM and container inits) the runner would otherwise stay a
    zombie forever.
    """

    def __init__(self, *, shell: str = "sh", env: dict[str, str] | None = None) -> None:
        self.shell = shell
        self.env = env

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        """Run ``cmd``; see :class:`ExecuteBackend`.

        :raises TimeoutError: if it runs longer than ``timeout`` seconds (its group is killed).
        """
        self._collect_subreapers()
        script = script_fd(cmd)  # (None off Linux: the command goes through STDIN_SHIM's cat)
        try:
            proc = subprocess.Popen([self.shell, "-c", STDIN_SHIM] if script is None else [self.shell, SCRIPT_PATH],
                                    stdin=subprocess.PIPE if script is None else script, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True, env=self.env)
        finally:
            if script is not None:
                os.close(script)  # the shell has its own
        assert proc.stdout is not None
        try:
            if proc.stdin is not None:
                with proc.stdin:  # the shim's cat reads it all before the command starts
                    proc.stdin.write(cmd.encode("utf-8"))
            out = read_until_exit(proc, timeout)
        except BaseException:  # its timeout, or Ctrl-C/SIGTERM in the caller: none of it runs on
            kill_group(proc)
            raise
        finally:
            proc.stdout.close()
        return shell_status(proc.wait()), out.decode("utf-8", "replace")

    def execute_detached(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        """Run ``cmd``, which leaves daemons behind, under a subreaper that reaps them later.

        Returns when ``cmd`` itself has ended and its output is closed; the subreaper lives on
        until every process it adopted has ended, and is collected by later calls.

        :raises TimeoutError: if ``cmd`` runs longer than ``timeout`` seconds.
        """
        self._collect_subreapers()
        status_r, status_w = os.pipe()
        try:
            proc = subprocess.Popen([sys.executable, "-S", "-c", _SUBREAPER, str(status_w), self.shell, STDIN_SHIM],
                                    stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(status_w,),
                                    start_new_session=True, env=self.env)
        finally:
            os.close(status_w)
        # It lives as long as its kernel, past this process by design (the orphan timer): its Popen
        # must not warn "subprocess N is still running" when collected at exit (Popen.__del__ checks
        # _child_created, CPython 3.8-3.13); _collect_subreapers reaps it once it ended.
        proc._child_created = False  # type: ignore[attr-defined]
        with _SUBREAPERS_LOCK:
            _SUBREAPERS.append(proc)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(cmd.encode("utf-8"))  # the command never sits in a long-lived argv
            proc.stdin.close()
            out, status = read_until_closed(proc.stdout.fileno(), status_r, timeout)
        except BaseException:  # its timeout, or Ctrl-C/SIGTERM in the caller: no further step of it runs
            kill_group(proc)
            raise
        finally:
            os.close(status_r)
            if proc.stdout is not None:
                proc.stdout.close()
        if not status.strip().lstrip("-").isdigit():  # its last line may say why (a fork refused: its traceback)
            said = "".join(f": {line}" for line in out.strip().splitlines()[-1:])
            raise ExitStatusUnknownError(f"the launch command's exit status was not reported ({status!r}){said}",
                                         returned=repr(status))
        return shell_status(int(status)), out

    def _collect_subreapers(self) -> None:
        with _SUBREAPERS_LOCK:
            _SUBREAPERS[:] = [p for p in _SUBREAPERS if p.poll() is None]

    def close(self) -> None:
        """Collect subreapers that have finished (live ones keep reaping their kernels)."""
        self._collect_subreapers()

    def __repr__(self) -> str:
        return f"LocalShellBackend({self.shell!r})"


#: The subreaper: reads the command on stdin, runs the shell as its child (the command on its
#: stdin, :data:`STDIN_SHIM`), writes the command's
#: exit status to fd argv[1] when it ends, then reaps every orphan it adopted until none is left.
_SUBREAPER = r"""# hermes-kernel: the filecell LocalShellBackend's subreaper
import sys
if sys.path[:1] == ['']:  # the caller's working dir, where a project's own types.py shadowed the stdlib's
    del sys.path[0]
import ctypes, os
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except Exception:
    pass
status_fd = int(sys.argv[1])
shell, shim = sys.argv[2], sys.argv[3]
cmd = sys.stdin.buffer.read()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(status_fd)
    os.close(w)
    os.dup2(r, 0)
    os.close(r)
    try:
        os.execvp(shell, [shell, '-c', shim])
    finally:
        os._exit(127)
os.close(r)
with open(w, 'wb') as fh:
    try:
        fh.write(cmd)
    except OSError:
        pass
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
while True:
    try:
        child, status = os.wait()
    except ChildProcessError:
        break
    except InterruptedError:
        continue
    if child == pid:
        os.write(status_fd, str(os.waitstatus_to_exitcode(status)).encode())
        os.close(status_fd)
"""


def shell_status(returncode: int) -> int:
    """``subprocess``'s return code in the shell's convention: a death by signal N is 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


#: ``command -v timeout`` answers by (engine URL, full container id, user), for every backend of the
#: process (:func:`~...containers.engines.is_full_container_id`).
_HAS_TIMEOUT: dict[tuple[str, str, str | None], bool] = {}


class DockerExecBackend:
    """``docker exec <container> sh`` (docker-py), as the container's default user, ``cmd`` on its
    stdin (:data:`STDIN_SHIM`, stderr joined to stdout): never in the exec's argv, which ``ps`` in
    the container and ``docker inspect`` show (B43).

    :param container: a docker-py ``Container`` or a container id.
    :param user: exec user; ``""`` is the container's user.
    :param client: docker-py client for a container id; ``None`` opens one from the environment.

    Docker cannot end an exec from outside (moby/moby#35703), so a timeout is enforced inside
    the container with coreutils/busybox ``timeout`` when the image has it; the call itself
    then also gives up 5 s after the timeout and raises :class:`TimeoutError`.
    :meth:`start` makes a kernel host container for it (removed by :meth:`close`).
    """

    def __init__(self, container: Container | str, *, user: str = "", client: Any = None) -> None:
        if isinstance(container, str):
            import docker

            self._client = client or docker.from_env()
            self.container_id = container
            self._owns_client = client is None
        else:
            self._client = container.client
            self.container_id = str(container.id)
            self._owns_client = False
        self.user = user
        self._has_timeout: bool | None = None
        self._owned_container = False

    @classmethod
    def start(cls, *, image: str | None = None, run_id: str = "filecell", worker_id: str = "controller",
              mem_limit_bytes: int | None = None) -> DockerExecBackend:
        """Start a kernel host container (no network) and return a backend that owns it.

        :param image: image to run; ``None`` builds/uses the kernel host image.
        :raises ContainerStartError: if the container does not come up.
        """
        from ...containers.lifecycle import start_kernel_host
        from ...containers.images import ensure_image

        container = start_kernel_host(image=image or ensure_image(progress=lambda _line: None), run_id=run_id,
                                      worker_id=worker_id, mem_limit_bytes=mem_limit_bytes)
        backend = cls(container)
        backend._owned_container = True
        return backend

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        """Run ``cmd`` in the container; see :class:`ExecuteBackend`.

        :raises TimeoutError: if the exec is still running 5 s after ``timeout`` seconds.
        """
        argv = ["sh", "-c", "exec 2>&1; " + STDIN_SHIM]  # one stream, in the order written
        if timeout is not None and self._timeout_available():
            argv = ["timeout", "-s", "KILL", f"{max(timeout, 0.1):.3f}", *argv]
        api = self._client.api
        exec_id = api.exec_create(self.container_id, argv, user=self.user, stdin=True, stdout=True,
                                  stderr=True)["Id"]
        from docker.utils.socket import frames_iter

        out = call_with_timeout(lambda: _exec_with_stdin(api, exec_id, cmd.encode("utf-8"), frames_iter),
                                None if timeout is None else timeout + 5.0)
        code = api.exec_inspect(exec_id).get("ExitCode")
        if code is None:  # docker-py/moby: the stream ended before the exec did (B35)
            raise ExitStatusUnknownError(f"docker exec {exec_id[:12]} in {self.container_id[:12]} reported no exit "
                                         "code (the exec still runs, or its stream broke)", returned="None")
        return int(code), (out or b"").decode("utf-8", "replace")

    def _timeout_available(self) -> bool:
        """Whether the container has ``timeout``: asked once per container for every backend of this
        process when the backend names it by full id, else once per backend (23 execs a suite run)."""
        if self._has_timeout is not None:
            return self._has_timeout
        key = (getattr(self._client.api, "base_url", ""), self.container_id, self.user)
        self._has_timeout = _HAS_TIMEOUT.get(key)
        if self._has_timeout is None:
            api = self._client.api
            exec_id = api.exec_create(self.container_id, ["sh", "-c", "command -v timeout"], user=self.user)["Id"]
            api.exec_start(exec_id)
            self._has_timeout = api.exec_inspect(exec_id).get("ExitCode") == 0
            if is_full_container_id(self.container_id):
                _HAS_TIMEOUT[key] = self._has_timeout
        return self._has_timeout

    def close(self) -> None:
        """Remove the container if :meth:`start` made it; close an owned client."""
        if self._owned_container:
            from ...containers.lifecycle import remove_container

            remove_container(self.container_id, client=self._client)
            self._owned_container = False
        if self._owns_client:
            self._client.close()
            self._owns_client = False

    def __repr__(self) -> str:
        return f"DockerExecBackend({self.container_id[:12]})"


def _exec_with_stdin(api: Any, exec_id: str, data: bytes, frames_iter: Any) -> bytes:
    """Start the exec, write ``data`` to its stdin and close it, and read its output to the end."""
    hijacked = api.exec_start(exec_id, socket=True)
    sock = getattr(hijacked, "_sock", hijacked)
    try:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)  # the shim's cat sees EOF, the output still arrives
        return b"".join(chunk for _stream, chunk in frames_iter(hijacked, tty=False))
    finally:
        close_exec_socket(hijacked)  # and the HTTP response docker-py keeps on it


def call_with_timeout(fn: Any, timeout: float | None, *, name: str = "hermes-docker-exec",
                      gave_up: Any = None) -> Any:
    """``fn()`` in a helper thread (left to end by itself if it never does); ``None``: no bound.

    :raises TimeoutError: if it has not returned in ``timeout`` s, or ``gave_up()``'s exception.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise gave_up() if gave_up else TimeoutError(f"docker exec did not return within {timeout} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
