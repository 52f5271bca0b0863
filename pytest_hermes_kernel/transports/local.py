"""Local transport: the kernel runner as a child process of the host.

The runner file (:mod:`.runner_zipapp`) is written into the kernel's private dir and run from
there, as on every other transport. It starts in its own session (``start_new_session=True``),
so it and everything the kernel starts can be found and killed together. The channel is one end of a socketpair passed by
fd: it is also the parent-death lease. When the host dies by any means (SIGKILL included, also
mid-cell) the kernel sees EOF and kills its worker's process group, then exits.
``PR_SET_PDEATHSIG`` is not used for the host link: it fires when the *thread* that spawned the
child exits, and registries spawn kernels from short-lived threads (the seed system rejected it
for the same reason).

Environment: the runner starts with a fixed launch environment (:func:`launch_env`: the host's
own ``PATH``, ``HOME``, locale and the variables this host's interpreter may need to start), so a
kernel's ``PYTHONPATH``, ``PYTHONHOME`` or ``LD_PRELOAD`` never changes how its runner starts.
The kernel's environment (``LaunchSpec.env``, whole) travels in the config on stdin and becomes
the worker's ``os.environ`` (``kernel/runner/environ.py``): cells and what they start see it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from ..errors import KernelStartError
from ..kernel.channel import SocketStream
from ..kernel.contract import Launched, LaunchSpec, Transport
from ..kernel.files import KernelFiles
from ..procs import dirs_under, kill_session, pid_alive, start_ticks
from .runner_zipapp import write_runner

KERNEL_DIR_PREFIX = "hermes-kernel-"
#: Host variables a runner is started with (the host's own values, never the kernel's ``env``
#: option): what an interpreter of this host may need to start at all.
LAUNCH_ENV_NAMES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PYTHONHOME", "LD_LIBRARY_PATH")


def launch_env(kernel_id: str) -> dict[str, str]:
    """The fixed environment a local runner starts with: :data:`LAUNCH_ENV_NAMES` as the host has
    them, and the kernel markers (:func:`~.detached.launch_env`: the leak probes, ``hermes-kernel
    sweep`` and the failed-launch kill find a kernel's processes by them). The kernel's own
    environment is applied by its worker (``kernel/runner/environ.py``).

    :param kernel_id: the kernel's id.
    """
    from .detached import launch_env as markers

    env = {name: os.environ[name] for name in LAUNCH_ENV_NAMES if name in os.environ}
    env.update(markers(kernel_id))
    return env


def kernel_dir_root() -> str:
    """Where local kernel dirs are made: ``$PYTEST_HERMES_KERNEL_DIR`` or the temp dir."""
    return os.environ.get("PYTEST_HERMES_KERNEL_DIR") or tempfile.gettempdir()


class LocalTransport(Transport):
    """Kernels as local subprocesses (see module docstring)."""

    name: ClassVar[str] = "local"

    def __init__(self, *, python: str | None = None) -> None:
        self.python = python or sys.executable

    @property
    def runs_on_this_host(self) -> bool:
        return True

    def launch(self, spec: LaunchSpec) -> Launched:
        kdir, runner = _make_kernel_dir()
        host_end, kernel_end = socket.socketpair()
        log = open(os.path.join(kdir, "runner.log"), "wb")
        try:
            proc = subprocess.Popen(
                [spec.python or self.python, "-B", runner, "serve", "--fd", str(kernel_end.fileno())],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
                pass_fds=(kernel_end.fileno(),), start_new_session=True,
                env=launch_env(spec.kernel_id), cwd=spec.cwd or kdir,
            )
        except OSError as exc:
            host_end.close()
            shutil.rmtree(kdir, ignore_errors=True)
            hint = (f"the working directory cwd={spec.cwd!r} does not exist" if spec.cwd and not os.path.isdir(spec.cwd)
                    else "check the interpreter path (option python=...)")
            raise KernelStartError(f"could not start the local kernel runner with {spec.python or self.python!r}: "
                                   f"{exc}\nHint: {hint}.") from None
        finally:
            kernel_end.close()
            log.close()
        try:
            config = dict(spec.config, kernel_dir=kdir, env=spec.env, env_clear=True)  # the whole environment
            proc.stdin.write(json.dumps(config).encode())
            proc.stdin.close()
        except OSError:
            pass  # it died at once; the hello wait reports it with the runner log
        return Launched(stream=SocketStream(host_end), pid=proc.pid, kernel_dir=kdir,
                        label=f"local pid {proc.pid}", extra={"proc": proc, "start_ticks": start_ticks(proc.pid)})

    def kill(self, launched: Launched) -> bool:
        if launched.pid is None:
            return True
        leader = launched.extra.get("start_ticks")  # once the runner is reaped its pid may be reused (B29)
        kill_session(launched.pid, leader_start=leader)
        proc: subprocess.Popen[bytes] = launched.extra["proc"]
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            return False
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # members of the session re-parented to init
            if not kill_session(launched.pid, leader_start=leader):
                return True
            time.sleep(0.02)
        return False

    def alive(self, launched: Launched) -> bool:
        proc: subprocess.Popen[bytes] = launched.extra["proc"]
        return proc.poll() is None and pid_alive(proc.pid)

    def reap(self, launched: Launched, timeout: float) -> bool:
        """Wait for the runner to exit, leaving no zombie; True when it did within ``timeout``."""
        proc: subprocess.Popen[bytes] = launched.extra["proc"]
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def exit_status(self, launched: Launched, timeout: float) -> int | None:
        proc: subprocess.Popen[bytes] = launched.extra["proc"]
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def sweep_stale(self, max_age_s: float) -> int:
        return sweep_stale_kernel_dirs(max_age_s)

    def cleanup(self, launched: Launched) -> None:
        if launched.kernel_dir:
            shutil.rmtree(launched.kernel_dir, ignore_errors=True)

    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        try:
            text = Path(launched.kernel_dir or "", "runner.log").read_text("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def files(self, launched: Launched, workdir: str) -> KernelFiles:
        """The kernel's files, reached in this process (:class:`~.files.LocalFiles`)."""
        from .files import LocalFiles

        return LocalFiles(workdir)

    def describe(self) -> str:
        return f"local ({self.python})"


def _make_kernel_dir() -> tuple[str, str]:
    """A new kernel dir (mode 0700, ``hermes-kernel-<host pid>-<random>``) holding the runner file.

    The host pid in the name lets the leak checker tell this process's dirs apart.

    :returns: the dir and the runner file's path in it.
    :raises KernelStartError: if the runner file cannot be written there.
    """
    kdir = tempfile.mkdtemp(prefix=f"{KERNEL_DIR_PREFIX}{os.getpid()}-", dir=kernel_dir_root())
    try:
        return kdir, write_runner(kdir)  # ~0.1 ms; private, and it goes with the kernel
    except OSError as exc:
        shutil.rmtree(kdir, ignore_errors=True)
        raise KernelStartError(f"could not write the kernel runner into {kdir}: {exc}\n"
                               "Hint: is the kernel dir root writable (PYTEST_HERMES_KERNEL_DIR)?") from None


def sweep_stale_kernel_dirs(max_age_s: float, root: str | None = None) -> int:
    """Remove local kernel dirs older than ``max_age_s`` seconds or whose host pid is dead.

    Another live host may own younger dirs; symlinks are never followed.

    :returns: how many dirs were removed.
    """
    removed = 0
    for path in stale_kernel_dirs(max_age_s, root):
        try:
            shutil.rmtree(path)
            removed += 1
        except OSError:
            continue
    return removed


def stale_kernel_dirs(max_age_s: float, root: str | None = None) -> list[str]:
    """The local kernel dirs :func:`sweep_stale_kernel_dirs` would remove (nothing is removed).

    :param max_age_s: a dir older than this (seconds since its last change) is stale.
    :param root: where kernel dirs are made; default :func:`kernel_dir_root`.
    """
    now = time.time()
    stale = []
    for name, path in dirs_under(root or kernel_dir_root(), KERNEL_DIR_PREFIX):
        try:
            if now - os.lstat(path).st_mtime > max_age_s or _host_dead(name[len(KERNEL_DIR_PREFIX):]):
                stale.append(path)
        except OSError:
            continue
    return stale


def _host_dead(rest: str) -> bool:
    """Whether a kernel dir named ``hermes-kernel-<host pid>-<random>`` belongs to a dead host."""
    pid, sep, _ = rest.partition("-")
    return bool(sep) and pid.isdigit() and not pid_alive(int(pid))
