"""``filecell``: kernels on backends that can only run a command to completion.

The only primitive is :class:`~.backends.ExecuteBackend` ``execute(cmd, timeout) -> (exit code,
output)`` (the seed system's ``env.execute``). On top of it:

* **launch** is one execute: make a 0700 kernel dir under ``root``, ship the runner file
  (its ``compact`` zipapp, compressed, in the command text: a command holds ~100 KB), write a
  0600 token (made there, never on a command line) and config, start
  ``python3 -B DIR/hermes-runner-<hash>.pyz serve --listen DIR/sock`` (it reads the config,
  daemonizes into its own session, prints ``ready <pid>``), delete the config, and run the
  runner file's client once for the runner's hello.
* **cells**: the channel's frames travel in long polls, one execute of the client per poll
  (:mod:`.filecell_stream`): a trivial cell is one execute; a tool call adds one. The seed's
  file protocol needed at least 4 executes and 0.5 s polls per cell.
* **interrupt** while a cell runs: ``kill -INT -<worker pgid>`` by a separate execute.
* **alive**: the runner's pid (from ``ready``) has ``DIR/sock`` in ``/proc/<pid>/cmdline``
  (``DIR`` ends in a random nonce, so a reused pid never passes). **kill**: SIGKILL every
  process of the runner's session. **cleanup**: ``rm -rf DIR``.
* **host gone**: nobody attaches between cells anyway, so the runner's orphan timer is an idle
  timer: ``orphan_timeout`` defaults to
  :data:`~pytest_hermes_kernel.kernel.options.IDLE_ORPHAN_TIMEOUT_S` (1800 s, the seed's idle
  exit) instead of ``KernelOptions.orphan_timeout``; ``None`` keeps the kernel option, as on
  every transport.

Not re-attachable: every cell is its own execute, so there is no connection to drop.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from typing import Any, ClassVar

from ...errors import ConfigError, ExitStatusUnknownError, KernelStartError, TransportLostError
from . import probes, scripts, start_errors
from .backends import DockerExecBackend, ExecuteBackend, LocalShellBackend, call_with_timeout
from .files import FileCellFiles
from ...kernel.contract import Launched, LaunchSpec, Transport
from ...kernel.control import despite_signals
from ...kernel.options import IDLE_ORPHAN_TIMEOUT_S
from .stream import FileCellStream
from ..detached import runner_config
from ..far_records import LeftBehind, MadeDirs
from ...kernel.options import check_options
from ..runner_zipapp import runner_zipapp

__all__ = ["DEFAULT_ROOT", "DockerExecBackend", "ExecuteBackend", "FileCellTransport", "LocalShellBackend"]

#: The default root: one per user of this machine (a root shared by every user was refused to all
#: but the first to make it: it must be the backend's user's own, 0700).
DEFAULT_ROOT = f"/tmp/hermes-filecell-{os.getuid()}"
#: The default root before it was per user: the sweep still looks there for this user's dirs.
LEGACY_ROOT = "/tmp/hermes-filecell"
#: A unix socket path must fit in 108 bytes; the kernel dir adds ``/k-<12>-<16>/sock``. Bytes (UTF-8),
#: not characters: a root of 50 ``é`` passed a count of characters, and no kernel could start under it.
_MAX_ROOT_BYTES = 70
#: Extra seconds an execute may take beyond the poll's own deadline (process start, transfer).
_EXECUTE_SLACK_S = 15.0
#: Seconds past its own timeout that the transport waits for a backend's execute to return.
EXECUTE_OVERRUN_S = 10.0
#: The runner's line for a cwd it cannot enter (``serve.enter_cwd``); group 1: the reason.
_LATE_HELLO = "the filecell kernel runner did not say hello within {:g} s (start_timeout): {!r} ended the launch at it\n{}"
_CWD_REFUSED = re.compile(r"hermes-kernel runner: cannot enter the working directory cwd=.*?: ([^\n]+)")
#: Timeouts of the short commands: a liveness probe (or cleanup, log), a kill, a frame drop.
PROBE_TIMEOUT_S, KILL_TIMEOUT_S, DROP_TIMEOUT_S = 15.0, 20.0, 30.0

log = logging.getLogger(__name__)


class FileCellTransport(Transport):
    """Kernels through an :class:`~.backends.ExecuteBackend` (see module docstring).

    :param backend: runs the commands; ``None`` is :class:`~.backends.LocalShellBackend`.
    :param python: interpreter on the backend's side.
    :param root: parent of the kernel dirs there (made 0700 if missing; must be owned by the
        backend's user and not a symlink); default :data:`DEFAULT_ROOT` (this process's uid's).
    :param orphan_timeout: seconds a runner lives with no client attached: an idle timeout,
        since nobody is attached between cells (default
        :data:`~pytest_hermes_kernel.kernel.options.IDLE_ORPHAN_TIMEOUT_S`); ``None`` keeps the
        kernel option's value (``KernelOptions.orphan_timeout``), as on every transport.
    :param poll_window_s: longest single poll; a longer wait is several polls. Keep it well
        under the backend's own limits (docker-py's HTTP timeout is 60 s).
    :param launch_timeout: seconds for the launch execute (default 60 s), cut to the kernel's
        ``start_timeout`` (30 s by default), which bounds the whole launch, shipping the runner included (given up
        :data:`EXECUTE_OVERRUN_S` s later if the backend has not returned: :class:`KernelStartError`).
    :param hold_s: after a poll returns a tool call (the cell runs on while the host serves it), a
        holder process stays attached for up to this long, so frames sent meanwhile (a tool call
        from another thread) are kept for the next poll; ``0`` turns holding off.
    :raises ConfigError: if ``root`` is relative or too long for a unix socket path.
    """

    name: ClassVar[str] = "filecell"
    reattachable: ClassVar[bool] = False

    def __init__(self, backend: ExecuteBackend | None = None, *, python: str = "python3",
                 root: str | None = None, orphan_timeout: float | None = IDLE_ORPHAN_TIMEOUT_S, poll_window_s: float = 20.0,
                 launch_timeout: float = 60.0, hold_s: float = 600.0) -> None:
        root = (root or DEFAULT_ROOT).rstrip("/")
        if not root.startswith("/") or len(root.encode("utf-8", "surrogatepass")) > _MAX_ROOT_BYTES:
            raise ConfigError(f"filecell root must be an absolute path of at most {_MAX_ROOT_BYTES} "
                              f"bytes (unix socket paths are short), got {root!r}")
        check_options("filecell transport", optional=("orphan_timeout",), commands={"python": python},
                      seconds={"orphan_timeout": orphan_timeout, "hold_s": hold_s},
                      positive_seconds={"poll_window_s": poll_window_s, "launch_timeout": launch_timeout})
        if isinstance(backend, type) or not callable(getattr(backend, "execute", None)) and backend is not None:
            raise ConfigError(f"filecell backend {backend!r} " + (f"is a class: pass an instance, {backend.__name__}()"
                              if isinstance(backend, type) else "has no execute(cmd, timeout) method"))
        self.backend: ExecuteBackend = backend or LocalShellBackend()
        self._owns_backend = backend is None
        self.python = python
        self._resolved: dict[str, str] = {}  # ``python`` as given -> the interpreter a launch found it runs
        self.root = root
        self.orphan_timeout = orphan_timeout
        self.poll_window_s = poll_window_s
        self.launch_timeout = launch_timeout
        self.hold_s = hold_s
        self.attached_after_host_s = poll_window_s + hold_s  # a poll in flight as the host dies, then its holder
        self.made_dirs = MadeDirs()  # kernel dirs made through the backend, for the leak probe (:mod:`.probes`)
        self.left = LeftBehind()  # what spawned runners said their cells left running there
        self.kernel_ids = probes.KernelIds()  # of kernels launched here: the leak probe lists only their processes

    # ------------------------------------------------------------------------------ launch
    @property
    def runs_on_this_host(self) -> bool:
        from .backends import LocalShellBackend

        return isinstance(self.backend, LocalShellBackend)

    def launch(self, spec: LaunchSpec) -> Launched:
        kdir = f"{self.root}/k-{spec.kernel_id[:12]}-{secrets.token_hex(8)}"
        python = spec.python or self.python
        app = runner_zipapp("compact")
        site = FileCellSite(self, kdir, python, app.name)
        config = json.loads(runner_config(spec, kdir, self.orphan_timeout))
        config.pop("token", None)  # a fresh one is made on the far side, never on a command line
        unset = [name for name in os.environ if name not in spec.env]  # the host's: not for the kernel
        config["env_unset"] = unset
        setup_python = self._resolved.get(python, python)
        budget = self.launch_timeout if spec.start_timeout is None else min(self.launch_timeout, spec.start_timeout)
        cmd = scripts.launch_command(
            root=self.root, kdir=kdir, python=python, setup_python=setup_python, runner=app.name,
            files={app.name: app.data}, config=config, kernel_id=spec.kernel_id, unset=unset,
            hello_params=scripts.params(wait=[], deadline_s=min(30.0, budget)))
        run = getattr(self.backend, "execute_detached", None) or self.backend.execute
        self.made_dirs.add(probes.HERE, kdir)
        self.kernel_ids.add(spec.kernel_id)
        try:
            code, out = self.call(cmd, budget, run=run)  # start_timeout bounds it (it took launch_timeout, 60 s)
        except TransportLostError as exc:  # it hung: what it may have started is ended, as far as it can be
            self._end_failed_launch(spec.kernel_id, kdir, None, python)
            raise KernelStartError(f"filecell launch through {self.backend!r} failed: {exc}{scripts.fork_hint(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - any backend failure is a failed start
            self._end_failed_launch(spec.kernel_id, kdir, None, python)
            if isinstance(exc, TimeoutError) and budget < self.launch_timeout:
                raise KernelStartError(_LATE_HELLO.format(budget, self.backend, exc)) from None
            said = f"{type(exc).__name__}: {exc}"  # (a fork refused: BlockingIOError, EAGAIN)
            raise KernelStartError(f"filecell launch through {self.backend!r} failed: {said}\nHint: " + (
                scripts.OUT_OF_PROCESSES_HINT if scripts.OUT_OF_PROCESSES.search(said) else scripts.RAISED_HINT)) from None
        except BaseException:  # Ctrl-C or SIGTERM mid-launch: the runner may have started, its pid unknown
            despite_signals(lambda: self._end_failed_launch(spec.kernel_id, kdir, None, python))
            raise
        if not isinstance(out, str):  # bytes, or (output, status) swapped: nothing below could read it
            text = out.decode("utf-8", "replace") if isinstance(out, bytes) else str(code)
            self._end_failed_launch(spec.kernel_id, kdir, scripts.parse_ready(text), python)
            raise KernelStartError(f"filecell launch through {self.backend!r} failed: execute returned "
                                   f"({code!r:.60}, {out!r:.60}); it must return (exit status, output text), the "
                                   "output decoded (UTF-8)")
        pid = scripts.parse_ready(out)
        hello = scripts.parse_client_output(out)
        unknown = _unknown_status(self.backend, code)
        if unknown is not None:  # it may or may not have started: end what it may have left (B35)
            self._end_failed_launch(spec.kernel_id, kdir, pid, python)
            raise KernelStartError(f"filecell launch through {self.backend!r} failed: {unknown}") from None
        if code != 0 or pid is None or hello.status != "done" or not hello.frames:
            self._resolved.pop(python, None)  # the next launch looks it up again
            if pid is not None and hello.status in ("gone", "eof"):  # it said hello to no one, or died at it: its log says why
                out += "\nrunner log (last lines):\n" + _log_of(self, kdir)
            self._end_failed_launch(spec.kernel_id, kdir, pid, python)
            refused = _CWD_REFUSED.search(out)
            if refused:  # the runner's own line (serve.enter_cwd): said as the other transports say it
                raise KernelStartError(f"filecell transport: cannot enter the working directory cwd={spec.cwd!r} "
                                       f"through {self.backend!r}: {refused.group(1)}")
            if code == 124 and budget < self.launch_timeout:
                raise KernelStartError(_LATE_HELLO.format(budget, self.backend, start_errors.plain_output(out) or "<no output>"))
            raise KernelStartError(start_errors.start_failed(code, out, pid, hello.status, python, self.root))
        resolved = scripts.parse_python(out)
        if resolved:  # resolved once: no PATH lookup (nor wrapper, such as a pyenv shim) per poll or setup
            self._resolved[python] = resolved
        site.python = python = resolved or python
        stream = FileCellStream(site, hello.frames, poll_window_s=self.poll_window_s)
        return Launched(stream=stream, pid=pid, kernel_dir=kdir, label=f"filecell {self.backend!r} pid {pid}",
                        extra={"site": site, "python": python, "runner": app.name, "kernel_id": spec.kernel_id})

    def run_command(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        """Run ``cmd`` through the backend where its exit status is read, checked (B35).

        (Commands judged by their output alone, the liveness, kill and poll scripts, call the
        backend directly: their status is never read.)

        :returns: ``(exit status 0..255, output)``; a signal death is 128 + the signal.
        :raises ExitStatusUnknownError: if the backend returned no usable status (``None``, a
            negative number, over 255): unknown, never read as success or as an ordinary failure.
        """
        code, out = self.call(cmd, timeout)
        unknown = _unknown_status(self.backend, code)
        if unknown is not None:
            raise unknown
        return code, out

    def call(self, cmd: str, timeout: float | None, *, run: Any = None) -> tuple[int, str]:
        """``backend.execute(cmd, timeout)`` (or ``run(cmd, timeout)``: the launch's detached execute),
        waited for up to ``timeout`` + :data:`EXECUTE_OVERRUN_S` s (``None``: as long as it takes), on a
        thread of its own, left to end by itself if it never does.

        :raises TransportLostError: if it has not returned by then: a backend must end a command at
            its timeout, and one whose call hangs (a dead connection with no timeout of its own) hung
            a cell's timeout ladder, a start, a shutdown and the leak check forever.
        """
        bound = None if timeout is None else timeout + EXECUTE_OVERRUN_S
        run = run or self.backend.execute
        return call_with_timeout(  # type: ignore[no-any-return]
            lambda: run(cmd, timeout), bound, name="hermes-filecell-execute",
            gave_up=lambda: TransportLostError(
                f"the filecell backend {self.backend!r} did not return from execute within {bound:g} s (its "
                f"timeout was {timeout:g} s): it must end a command at its timeout and return (or raise TimeoutError)"))

    def _end_failed_launch(self, kernel_id: str, kdir: str, pid: int | None, python: str) -> None:
        """End what a failed or interrupted launch may have started, then remove its dir: the
        runner's session when its pid came back, else every process with the kernel's marker (a
        runner whose pid was lost, with the output or to a Ctrl-C, lived until its 1800 s idle timer)."""
        python = self._resolved.get(python, python)
        try:
            self.call(scripts.kill_command(kdir=kdir, pid=pid, python=python) if pid is not None
                      else scripts.kill_kernel_command(kernel_id=kernel_id, python=python), KILL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - best effort: the launch's own error goes on
            log.debug("filecell: ending the failed launch of kernel %s failed: %s", kernel_id, exc)
        self._cleanup_quietly(kdir)
        self.kernel_ids.ended(kernel_id, scanned=not self.runs_on_this_host)

    def _cleanup_quietly(self, kdir: str) -> None:
        try:
            if self.call(scripts.cleanup_command(root=self.root, kdir=kdir), PROBE_TIMEOUT_S)[0] == 0:
                self.made_dirs.removed(kdir)  # the leak probe need not look for it
        except Exception as exc:  # noqa: BLE001 - best effort after a failed launch
            log.debug("filecell cleanup of %s failed: %s", kdir, exc)

    # ------------------------------------------------------------------------------ lifecycle
    def kill(self, launched: Launched) -> bool:
        if launched.pid is None or not launched.kernel_dir:
            return True
        try:
            _, out = self.call(scripts.kill_command(kdir=launched.kernel_dir, pid=launched.pid,
                                                    python=launched.extra.get("python", self.python)), KILL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - unreachable: not confirmed
            log.warning("filecell kill of runner %s failed: %s", launched.pid, exc)
            return False
        gone = out.strip().splitlines()[-1:] == ["gone"]
        if gone:
            launched.extra["gone"] = True
        return gone

    def alive(self, launched: Launched) -> bool:
        """Whether the backend saw the runner running; ``False`` also when it cannot be asked (it
        cannot tell: :meth:`seen_gone` is ``False`` then too). It said ``True`` then, which a
        loss's note read as a runner seen alive."""
        return _liveness(self, launched) == "ALIVE"

    def seen_gone(self, launched: Launched) -> bool:
        """Whether the runner was seen gone (killed, or the backend saw it ended)."""
        return _liveness(self, launched) == "GONE"

    def frozen(self, launched: Launched) -> bool:
        return probes.runner_frozen(self, launched)

    def reap(self, launched: Launched, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the runner to end (checked on the far side, one execute).

        :returns: True once it is seen gone (it answered ``0`` here, falsy: every shutdown then
            ran the kill's execute after it, a python start on the far side, for nothing).
        """
        if launched.pid is None or not launched.kernel_dir or launched.extra.get("gone"):
            return True
        try:
            _, out = self.call(
                scripts.reap_command(kdir=launched.kernel_dir, pid=launched.pid, timeout=timeout), timeout + 15.0)
        except Exception:  # noqa: BLE001 - cannot confirm
            return False
        if "GONE" in out:
            launched.extra["gone"] = True
            return True
        return False

    def cleanup(self, launched: Launched) -> None:
        stream = launched.stream
        if isinstance(stream, FileCellStream):
            stream.close()
            stream.join(5.0)
        if launched.kernel_dir:
            self._cleanup_quietly(launched.kernel_dir)
        if launched.extra.get("kernel_id"):
            self.kernel_ids.ended(launched.extra["kernel_id"], scanned=not self.runs_on_this_host)

    def close(self) -> None:
        probes.end_left_running(self)  # kernels no shutdown ended: a script's, at its exit
        if self._owns_backend:
            closer = getattr(self.backend, "close", None)
            if callable(closer):
                closer()

    def cleanup_kept(self, locator: dict[str, Any]) -> None:
        """Remove the kernel dir of a runner gone for good, found by its :meth:`locator` (a host
        harness's kernel whose survivors were killed: nothing else removes it); never raises."""
        probes.cleanup_located(self, locator)

    # ------------------------------------------------------------------------------ diagnostics
    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        return _log_of(self, launched.kernel_dir or "", lines)

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """Live processes of kernel ``kernel_id`` where the backend runs (scanned there).

        :raises TransportLostError: if the backend cannot run the scan (an empty list would read
            as "nothing of the kernel is left").
        """
        try:
            code, out = self.call(scripts.processes_command(kernel_id=kernel_id, python=self.scan_python()), 30.0)
            if code != 0:  # (its python not there: "exec: python3: not found", and no process listed)
                raise OSError(f"exit status {code}, output {out[-200:]!r}")
        except Exception as exc:  # noqa: BLE001 - any backend failure: the scan did not run
            raise TransportLostError(f"the scan for kernel {kernel_id}'s processes through {self.backend!r} "
                                     f"failed: {type(exc).__name__}: {exc}") from None
        from ..detached import parse_kernel_processes

        return parse_kernel_processes(out.encode())

    def scan_python(self) -> str:
        """The interpreter scans run with: what a launch found ``python`` runs, else a kernel's ``python=``."""
        return self._resolved.get(self.python) or ([*self._resolved.values()] or [self.python])[-1]

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        """Kernel dirs left behind, and (a backend that is not this machine's shell) the kernels'
        processes where it runs (:mod:`.probes`)."""
        return probes.snapshot(self, host_pid)

    def leak_cleanup(self, kind: str, identity: str) -> None:
        probes.cleanup(self, kind, identity)

    def note_leftovers(self, launched: Launched, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        """Scanned for through a remote backend; a local shell backend's subreaper adopts them
        (the host's ``child process`` probe lists them)."""
        if not self.runs_on_this_host:
            self.left.add(probes.HERE, kernel_id, processes)

    def signal_pid(self, launched: Launched, pid: int, sig: int) -> None:
        """Send ``sig`` to ``pid`` where the backend runs.

        :raises ProcessLookupError: if it could not be signalled.
        """
        code, _ = self.run_command(f"kill -{int(sig)} {int(pid)}", 15.0)
        if code != 0:
            raise ProcessLookupError(f"no process {pid} on {self.backend!r}")

    def files(self, launched: Launched, workdir: str) -> FileCellFiles:
        """The kernel's files through the backend (:class:`~.files.FileCellFiles`)."""
        return FileCellFiles(self, workdir, launched.extra.get("python") or self.python)

    def describe(self) -> str:
        return f"filecell ({self.backend!r}, {self.python}, root {self.root})"


def _unknown_status(backend: object, code: object) -> ExitStatusUnknownError | None:
    """``None`` for an exit status ``backend`` may return (0..255), else the error that says so."""
    if isinstance(code, int) and not isinstance(code, bool) and 0 <= code <= 255:
        return None
    return ExitStatusUnknownError(f"the filecell backend {backend!r} returned exit status {code!r}: the "
                                  "command's outcome is unknown (an exit status is 0..255; a signal death is "
                                  "128 + the signal)", returned=repr(code))


def _log_of(transport: FileCellTransport, kdir: str, lines: int = 20) -> str:
    """The last ``lines`` of the runner log in ``kdir``; ``""`` where it cannot be read."""
    try:
        _, out = transport.call(scripts.log_command(kdir=kdir, lines=lines), 15.0)
    except Exception:  # noqa: BLE001
        return ""
    return out.rstrip()


def _liveness(transport: FileCellTransport, launched: Launched) -> str:
    """``"ALIVE"``, ``"GONE"``, or ``""`` when the backend could not be asked (cannot tell)."""
    if launched.pid is None or not launched.kernel_dir or launched.extra.get("gone"):
        return "GONE"
    for _ in range(3):
        try:
            _, out = transport.call(scripts.alive_command(kdir=launched.kernel_dir, pid=launched.pid), PROBE_TIMEOUT_S)
        except TransportLostError:  # it hung past its timeout: asking again would hang as long again
            return ""
        except Exception as exc:  # noqa: BLE001 - a blip is not a death: ask again
            log.debug("filecell liveness probe failed: %s", exc)
            continue
        if "ALIVE" in out or "GONE" in out:
            return "ALIVE" if "ALIVE" in out else "GONE"
    return ""


class FileCellSite:
    """One kernel dir on one backend: what :class:`~.filecell_stream.FileCellStream` runs."""

    def __init__(self, transport: FileCellTransport, kdir: str, python: str, runner: str) -> None:
        self.transport = transport
        self.kdir = kdir
        self.python = python
        self.runner = runner  # the runner file's name in kdir
        self.executes = 0

    def _execute(self, cmd: str, timeout: float) -> tuple[int, str]:
        self.executes += 1
        return self.transport.call(cmd, timeout)

    def poll(self, frames: bytes, *, wait: list[Any], pending: list[Any], window_s: float, pickup_s: float,
             early: int) -> scripts.ClientOutput:
        """One client run: send ``frames``, relay until a ``wait`` id is answered or ``window_s``."""
        args = {"wait": wait, "pending": pending, "deadline_s": window_s, "pickup_s": pickup_s, "early": early,
                "hold_s": self.transport.hold_s}
        cmd = scripts.client_command(kdir=self.kdir, python=self.python, runner=self.runner,
                                     params=scripts.params(frames=scripts.b64(frames), **args))
        if len(cmd) > scripts.MAX_COMMAND_BYTES:  # a big cell: ship its frames first
            self.drop(frames, early)
            args["early"] = early + 1
            cmd = scripts.client_command(kdir=self.kdir, python=self.python, runner=self.runner,
                                         params=scripts.params(**args))
        code, out = self._execute(cmd, window_s + _EXECUTE_SLACK_S)
        parsed = scripts.parse_client_output(out)
        parsed.code = code
        return parsed

    def drop(self, frames: bytes, seq: int) -> None:
        """Put frames into the kernel dir; the attached (or next) client sends them."""
        for cmd in scripts.drop_commands(kdir=self.kdir, seq=seq, data=frames):
            self.executes += 1
            code, out = self.transport.run_command(cmd, DROP_TIMEOUT_S)  # its status is read: checked (B35)
            if code != 0:
                raise BrokenPipeError(f"could not drop frames into {self.kdir}: {out.strip()[-200:]}"
                                      f"{probes.disk_note(self.transport, self.kdir)}")
