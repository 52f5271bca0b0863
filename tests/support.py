"""What this repo's own tests share, as plain functions and classes (the fixtures built on them
are in the repo's top-level ``conftest.py``).

Waiting is always on a condition with a deadline (``wait_until``, or a cell that reports it is
running: ``CellStarted``), never a fixed sleep; the process probes read ``/proc`` and psutil
directly so they see what a user would see. Nothing here is for users of the plugin: they get
everything from the plugin and ``pytest_hermes_kernel.contract``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import types
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from pytest_hermes_kernel.contract._probes import (CellStarted, kernel_pids, run_in_thread,  # noqa: F401
                                                   signal_in_kernel, wait_until)
from pytest_hermes_kernel.kernel.contract import Launched, LaunchSpec, Transport
from pytest_hermes_kernel.kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from pytest_hermes_kernel.transports.detached import SCAN_END_SH, until_complete

REPO_ROOT = Path(__file__).resolve().parent.parent
KERNEL_ID_VAR = "HERMES_KERNEL_ID"


def stays_true(pred: Callable[[], object], duration: float, *, interval: float = 0.05) -> bool:
    """True if ``pred`` holds at every poll for ``duration`` seconds (a negative check window)."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        if not pred():
            return False
        time.sleep(interval)
    return bool(pred())


def gone(pid: int | None) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody reaped yet)."""
    if pid is None:
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def all_gone(pids: Iterable[int | None]) -> bool:
    return all(gone(pid) for pid in pids)


def interpreter_with(directory: Path, env: dict[str, str]) -> str:
    """A stand-in interpreter for ``python=``: this one, started with ``env`` in its environment.

    A kernel's own ``env`` never changes how its runner starts (issue #9 point 7), so a test that
    needs a runner whose start goes wrong (a ``sitecustomize`` that exits, a bad ``PYTHONHOME``)
    says so through the interpreter, as a user would.
    """
    import shlex

    path = directory / "python-with-env"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    path.write_text(f"#!/bin/sh\nexport {exports}\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    path.chmod(0o755)
    return str(path)


def reaped(pid: int) -> bool:
    """True when ``pid`` does not exist at all (exited *and* waited for: no zombie)."""
    return not psutil.pid_exists(pid)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is ``pgid``."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return members


def bench_module(name: str) -> types.ModuleType:
    """``benchmarks/<name>.py`` loaded from its file (``benchmarks/`` is no package), as module
    ``bench_<name>``, with ``benchmarks/`` on ``sys.path`` while it runs (``run.py`` imports its siblings)."""
    where = str(REPO_ROOT / "benchmarks")
    sys.path.insert(0, where)
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO_ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        sys.path.remove(where)
    return module


#: Nested dirs a deep-tree test makes: over the default recursion limit (1000) whatever the frames below.
DEEP_DIRS = 1500
#: A cell that makes :data:`DEEP_DIRS` nested dirs in its working dir, a file at the bottom, and says that dir.
NEST_DIRS_CELL = (f"import os\nroot = os.getcwd()\nfor _ in range({DEEP_DIRS}):\n    os.mkdir('a')\n    os.chdir('a')\n"
                  "open('f', 'w').close()\nos.chdir(root)\nroot")


def nest_dirs(path: str) -> None:
    """Make :data:`DEEP_DIRS` nested dirs below ``path`` (each opened by the one above: no path grows long)."""
    here = os.open(path, os.O_RDONLY)
    try:
        for _ in range(DEEP_DIRS):
            os.mkdir("a", dir_fd=here)
            below = os.open("a", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = below
    finally:
        os.close(here)


@pytest.fixture(name="tmp_path")
def tmp_path_for_deep_trees(tmp_path: Path) -> Iterator[Path]:
    """pytest's ``tmp_path``, emptied by ``rm -rf`` after the test (import it into a test module to
    use it there): a deep tree left by a failing test made pytest's own clean-up of old temp dirs
    raise ``RecursionError`` in a later run."""
    yield tmp_path
    subprocess.run(["rm", "-rf", "--", str(tmp_path)], check=False)


@pytest.fixture(name="transport_of")
def transports_closed_after(no_kernel_left_behind: None) -> Iterator[Callable[..., Transport]]:
    """``transport_of(name, **options)``: a transport of the test's own (``make_transport``; a
    ``filecell`` one on this machine's shell unless a backend is given), closed after the test
    (import it into a test module to use it there)."""
    from pytest_hermes_kernel.transports import make_transport
    from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend

    made: list[Transport] = []

    def make(name: str, **options: object) -> Transport:
        if name == "filecell":
            options.setdefault("backend", LocalShellBackend())
        made.append(make_transport(name, **options))
        return made[-1]

    yield make
    for transport in made:
        transport.close()


@pytest.fixture(name="kernels")
def kernels_shut_down_after() -> Iterator[list[Any]]:
    """``kernels``: a list the test appends the kernels it starts to; each is shut down after the
    test (import it into a test module to use it there)."""
    made: list[Any] = []
    yield made
    for kernel in made:
        kernel.shutdown()


@pytest.fixture(name="transport")
def local_transport_closed_after() -> Iterator[Transport]:
    """``transport``: a local transport of the test's own (its own kernel server), closed after the
    test (import it into a test module to use it there)."""
    from pytest_hermes_kernel.transports.local import LocalTransport

    made = LocalTransport()
    yield made
    made.close()


def environ_of(pid: int) -> dict[str, str]:
    """The environment of ``pid`` from ``/proc/PID/environ`` (empty if unreadable or gone)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def pids_with_kernel_id(kernel_id: str) -> list[int]:
    """Live pids whose environment carries ``HERMES_KERNEL_ID=kernel_id`` (runner, worker, children)."""
    found = []
    for pid in psutil.pids():
        if environ_of(pid).get(KERNEL_ID_VAR) == kernel_id and not gone(pid):
            found.append(pid)
    return found


def kernel_ids_below(pid: int | None = None) -> set[str]:
    """Distinct ``HERMES_KERNEL_ID`` values among the live descendants of ``pid`` (default: us).

    A kernel server's placeholder is not a kernel's id: servers outlive tests by design."""
    try:
        children = psutil.Process(pid or os.getpid()).children(recursive=True)
    except psutil.NoSuchProcess:
        return set()
    ids = set()
    for child in children:
        kid = environ_of(child.pid).get(KERNEL_ID_VAR)
        if kid and not kid.startswith(SERVER_KERNEL_ID_PREFIX) and not gone(child.pid):
            ids.add(kid)
    return ids


def child_pids(pid: int, name: str | None = None) -> list[int]:
    """Live descendants of ``pid``, optionally only those whose process name is ``name``."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for child in children:
        try:
            if (name is None or child.name() == name) and child.status() != psutil.STATUS_ZOMBIE:
                out.append(child.pid)
        except psutil.NoSuchProcess:
            continue
    return out


def server_spare(transport: Any, runners: Iterable[int]) -> tuple[int, int]:
    """The pids ``(supervisor, worker)`` of a local transport's kernel server's spare kernel
    (``kernel/runner/spare.py``), once it has made one: the server's child that is none of the
    kernels' ``runners`` and has forked its worker."""
    (server,) = transport.server_pids()
    known = set(runners)

    def found() -> tuple[int, int] | None:
        for child in psutil.Process(server).children():
            if child.pid not in known:
                workers = child.children()
                if workers:
                    return child.pid, workers[0].pid
        return None

    return wait_until(found, 10.0, what="the kernel server's spare (a supervisor and its worker)")


def kill_quietly(pids: Iterable[int | None], sig: int = signal.SIGKILL) -> None:
    """Clean-up for a failed test: signal pids this test started (directly or through a kernel)."""
    for pid in pids:
        if pid:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def python_host(script: str) -> subprocess.Popen[str]:
    """Run ``script`` as a separate host process that can import this checkout of the package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env)


def wait_request_sent(kernel: Any, timeout: float = 10.0) -> None:
    """Wait until ``kernel`` has sent a cell's request (its in-flight request id is set).

    For races *at* the send (an interrupt right behind the cell's frame); a test that needs the
    cell to be running waits for :class:`CellStarted` instead. It reads the handle's private
    in-flight id: the handle has no public "request sent" state.
    """
    wait_until(lambda: kernel._running_rid is not None, timeout, interval=0.005,
               what="the cell's request to be sent")


class FarSide(Transport):
    """A transport whose far side the test fills by hand; it counts the probe's visits."""

    name = "farside"

    def __init__(self) -> None:
        self.far: dict[str, str] = {}
        self.visits = 0

    def launch(self, spec: LaunchSpec) -> Launched:
        raise NotImplementedError

    def kill(self, launched: Launched) -> bool:
        raise NotImplementedError

    def alive(self, launched: Launched) -> bool:
        raise NotImplementedError

    def leave_behind(self, what: str) -> None:  # a public method: calling it is activity
        self.far[f"farside:{what}"] = what

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        self.visits += 1
        self.describe()  # what a probe calls meanwhile is not activity
        return {"remote kernel process": dict(self.far)}


class FakeClock:
    """A monotonic clock the test moves by hand (the registry's clock seam)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# ----------------------------------------------------------------- inner pytest runs (pytester)
RUN_TIMEOUT_S = 90.0
"""Longest one inner pytest run may take before pytester kills it (a hang, not slowness)."""

UNRELATED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:benchmark")
"""Third-party plugins installed here that the inner runs do not need. Under
PYTHONDONTWRITEBYTECODE pytest re-rewrites hypothesis at every start (about 3 s a run)."""


def output_of(result: pytest.RunResult) -> str:
    """stdout and stderr of a run as one text."""
    return result.stdout.str() + "\n" + result.stderr.str()


def pid_in(text: str, pattern: str) -> int:
    """The first ``(\\d+)`` group of ``pattern`` in ``text``; fails the test if absent."""
    found = re.search(pattern, text)
    assert found, f"no match for {pattern!r} in:\n{text}"
    return int(found.group(1))


def container_output(client: Any, container_id: str, argv: list[str], user: str = "root", tries: int = 3) -> str:
    """The complete stdout of ``argv`` run by ``docker exec`` in ``container_id`` (``client``: a
    docker-py ``DockerClient``), for a test's read-only look into a container.

    A loaded engine can answer an exec with its output lost or cut (moby/moby#27289): read as is,
    a scan sees no process where there is one (a kept kernel looked gone in 2 loaded runs). As
    the kit's own scans do (:func:`~pytest_hermes_kernel.transports.detached.until_complete`), the
    command prints an end line after ``argv`` and an answer without it is asked again ``tries``
    times; then the test fails naming what came back.
    """
    wrapped = ["sh", "-c", f'"$@"; {SCAN_END_SH}', "sh", *argv]

    def ask() -> tuple[int, bytes]:  # the exit code is not read: a complete answer is what counts
        return 0, client.api.exec_start(client.api.exec_create(container_id, wrapped, user=user)["Id"])

    answer, _, out = until_complete(ask, tries)
    if answer is None:
        raise AssertionError(f"no complete answer from {argv[:2]} in container {container_id[:12]} "
                             f"({tries} tries): {out[-300:]!r}")
    return answer.decode(errors="replace")


def own_run_id(args: Iterable[str]) -> tuple[str, list[str]]:
    """``(run id, arguments to add)`` for an inner pytest run: the ``--hermes-run-id`` that
    ``args`` name (nothing to add), else a new one to pass."""
    args = list(args)
    for i, arg in enumerate(args):
        name, _, value = arg.partition("=")
        if name == "--hermes-run-id" and (value or i + 1 < len(args)):
            return (value or args[i + 1]), []
    run_id = f"inner-{uuid.uuid4().hex[:12]}"
    return run_id, [f"--hermes-run-id={run_id}"]


def run_containers(run_id: str) -> list[dict[str, Any]]:
    """The engine's summaries (``Id``, ``Labels``, ``Status``, ...) of every container labelled
    with run ``run_id``, stopped ones too."""
    import docker

    from pytest_hermes_kernel.containers.labels import LABEL_RUN_ID

    client = docker.from_env()
    try:
        return list(client.api.containers(all=True, filters={"label": f"{LABEL_RUN_ID}={run_id}"}))
    finally:
        client.close()


def run_leftovers(run_id: str, *, within: float = 0.0) -> list[str]:
    """What a finished pytest run left that nothing will end: its containers and its run
    directory (where its sshd key is), ``[]`` when it left nothing (or no docker engine answers).

    A container holding a kernel kept for post-mortem, or parked for reuse, is left on purpose
    and not listed: a kept kernel's whatever its TTL (as the leak probe judges it, ``kept_container_ids``),
    since one a TTL of seconds ran out while the run ended, or just after, stays for the next sweep
    (a 2-s TTL's container was reported here under load, its TTL over before this check). Anything found is looked at again until ``within`` seconds pass (for a run
    whose processes may still be leaving; by default none: the run has ended, and waiting would
    let another run's start-up sweep remove a leftover first, a false pass), then removed, so
    that one test's leftover does not become the next run's sweep's work.
    """
    from pytest_hermes_kernel.containers.images import docker_status
    from pytest_hermes_kernel.containers.kept import kept_container_ids
    from pytest_hermes_kernel.containers.labels import LABEL_REUSE, LABEL_ROLE, LABEL_TMPDIR
    from pytest_hermes_kernel.containers.lifecycle import remove_container
    from pytest_hermes_kernel.containers.rundir import RUN_ID_PATTERN, run_dir_path

    if not RUN_ID_PATTERN.fullmatch(run_id) or not docker_status()[0]:  # a usage error; no engine: no container
        return []

    def left_on_purpose(summary: dict[str, Any]) -> bool:
        kept_dirs = {None, summary["Labels"].get(LABEL_TMPDIR) or None}  # this process's records, and its host's
        return summary["Labels"].get(LABEL_REUSE) == "1" or any(summary["Id"] in kept_container_ids(d) for d in kept_dirs)

    deadline = time.monotonic() + within
    while True:
        containers = [c for c in run_containers(run_id) if not left_on_purpose(c)]
        if not containers or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    directory = run_dir_path(run_id)
    if not containers and not os.path.isdir(directory):
        return []
    left = [f"{c['Labels'].get(LABEL_ROLE, '?')} container {c['Id'][:12]} ({c['Status']})" for c in containers]
    if os.path.isdir(directory):
        left.append(f"run directory {directory}: {sorted(os.listdir(directory))}")
    for container in containers:
        remove_container(container["Id"])
    shutil.rmtree(directory, ignore_errors=True)
    return left


def assert_run_left_nothing(run_id: str, result: pytest.RunResult) -> None:
    """Fail (after removing them) when the inner run ``run_id`` left containers or run files
    (:func:`run_leftovers`); the message ends with the run's output."""
    left = run_leftovers(run_id)
    assert not left, f"the inner run left (removed now): {left}\n{result.stdout.str()[-2000:]}"


@contextmanager
def transport_of_its_own(name: str, *, server: bool, **options: Any) -> Iterator[Transport]:
    """A new ``name`` transport with a run id, and so containers, of its own (a test may pause or
    kill them); closed after, which removes them. ``server``: the kernel-server or spawn path;
    ``options``: more of the transport's options."""
    from pytest_hermes_kernel.transports import make_transport

    transport = make_transport(name, run_id=f"test-{uuid.uuid4().hex}", server=server, **options)
    try:
        yield transport
    finally:
        transport.close()


class Hung(BaseException):
    """A test's own deadline ran out (:func:`hang_alarm`). Not an ``OSError`` or ``Exception``:
    no handler on the way may take it for a broken stream and carry on."""


@contextmanager
def hang_alarm(seconds: int, why: str) -> Iterator[None]:
    """Fail instead of hanging: SIGALRM raises :class:`Hung` (``why``: what a hang there means)
    in the main thread after ``seconds``, a lock's wait included; the previous handler is restored."""
    def expired(*_: object) -> None:
        raise Hung(f"no result in {seconds} s: {why}")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def assert_ctrl_c_leaves_no_runner(kernel: Any, call: Callable[[], object], what: str) -> None:
    """``call`` (``kernel.shutdown``, ``kernel.keep``...), cut short by a Ctrl-C the test arranged,
    propagates ``KeyboardInterrupt`` (Python's own SIGINT handler is installed for it) with nothing
    of the kernel's left where it ran, found by the launch record the call took away."""
    launched, transport = kernel.launched, kernel.transport

    def left() -> set[int]:
        return {int(line.split(":", 1)[0])
                for line in transport.kernel_processes(kernel.kernel_id, transport.locator(launched))}

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
        running = left()  # right as it propagates: nothing may be left
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not running, f"still running after {what} propagated Ctrl-C: {sorted(running)}"
    assert not kernel.alive
    wait_until(lambda: not left(), 5.0, what="the kernel's processes to stay gone")


def ctrl_c_first(call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` (a transport's ``kill``, say), which raises SIGINT (a second Ctrl-C, in the middle
    of the cleanup of a first one) the first time, just before it does its work."""
    pressed = []

    def after_a_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        if not pressed:
            pressed.append(True)
            signal.raise_signal(signal.SIGINT)
        return call(*args, **kwargs)
    return after_a_ctrl_c



def wrap_launch_streams(transport: Any, monkeypatch: pytest.MonkeyPatch,
                        wrap: Callable[[Any], Any]) -> list[tuple[str, Launched]]:
    """From now on (until ``monkeypatch`` undoes it) each launch of ``transport`` hands ``wrap`` its
    runner's stream (a wrapper that raises a signal at an exact point) and is recorded.

    :returns: the list each launch is appended to, as ``(kernel id, Launched as launched)``.
    """
    import dataclasses

    launches: list[tuple[str, Launched]] = []
    launch = transport.launch

    def launch_wrapped(spec: LaunchSpec) -> Launched:
        launched = launch(spec)
        launches.append((spec.kernel_id, launched))
        return dataclasses.replace(launched, stream=wrap(launched.stream))

    monkeypatch.setattr(transport, "launch", launch_wrapped)
    return launches


class SignalAsFrameGoesOut:
    """A runner's stream that raises signal ``sig`` once, as the first frame of type ``kind`` is
    sent: right after its bytes went out, or (``before``) instead of sending it first, so the
    runner never hears it. Python runs the handler at that exact point of the sending thread."""

    def __init__(self, inner: Any, kind: str, sig: int, *, before: bool = False) -> None:
        self.inner, self.sig, self.before = inner, sig, before
        self.marker = f'"type":"{kind}"'.encode()
        self.raised = False

    def send(self, data: bytes) -> None:
        due = not self.raised and self.marker in data
        if due and self.before:
            self.raised = True
            signal.raise_signal(self.sig)
        self.inner.send(data)
        if due and not self.before:
            self.raised = True
            signal.raise_signal(self.sig)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class InterruptAfterFrame:
    """A kernel's stream that calls ``kernel.interrupt()`` right after the next frame of type
    ``kind`` it sends has gone out (re-armed with :meth:`arm`): the order a host that interrupts
    just after answering a tool call sends them in, with nothing in between."""

    def __init__(self, kernel: Any, kind: str) -> None:
        self.channel = kernel._runtime.require_link().channel
        self.inner, self.kernel = self.channel.stream, kernel
        self.marker = f'"type":"{kind}"'.encode()
        self.armed = False
        self.channel.stream = self

    def arm(self) -> InterruptAfterFrame:
        self.armed = True
        return self

    def send(self, data: bytes) -> None:
        self.inner.send(data)
        if self.armed and self.marker in data:
            self.armed = False
            self.kernel.interrupt()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def kernel_process(host_pid: int, **env: str) -> subprocess.Popen[bytes]:
    """A ``sleep 300`` in a session of its own that looks like a kernel process of host
    ``host_pid`` (a fresh ``HERMES_KERNEL_ID`` unless ``env`` names one); the caller ends it."""
    env = {**os.environ, "HERMES_KERNEL_ID": uuid.uuid4().hex, "HERMES_KERNEL_HOST_PID": str(host_pid), **env}
    return subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)


def in_line(kernel: Any) -> int:
    """How many cells stand in ``kernel``'s queue line now (what ``queued`` reads off the line;
    a count kept apart once counted a cell an instant before it took its place, so a test that
    sent the next cell once one was counted could send it ahead of the one before)."""
    return sum(1 for place in kernel._queue._line if place.waits)


def start_error(transport: Transport, **options: Any) -> str:
    """The message of the :class:`KernelStartError` a start on ``transport`` with ``options`` must
    raise; ``transport`` is closed after. Fails the test if the kernel starts."""
    from pytest_hermes_kernel import KernelStartError, start_kernel

    try:
        with pytest.raises(KernelStartError) as info:
            start_kernel(transport, **options)
    finally:
        transport.close()
    return str(info.value)


@contextmanager
def greeting_port(greeting: bytes, *, hold: bool = False) -> Iterator[int]:
    """A loopback port that sends each connection ``greeting`` and closes it (an sshd past its
    MaxStartups, an HTTP server taking an ssh client's line), or with ``hold`` keeps it open and
    says nothing more (a host that stalls in the handshake); its number. Closed at the end."""
    import socket
    import threading

    server, stop, held = socket.create_server(("127.0.0.1", 0)), threading.Event(), []

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            try:
                conn.sendall(greeting)
            except OSError:  # the client went first
                conn.close()
                continue
            if hold:
                held.append(conn)
            else:
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def docker_cell_running(pool: Any, kernel: Any, transport: Any, seconds: float = 60.0) -> Any:
    """Submit to ``pool`` a cell of docker ``kernel`` that sleeps ``seconds``; return its future once
    the cell runs (it made a marker file, seen through ``transport``'s exec in the container)."""
    marker = f"/tmp/hermes-cell-runs-{uuid.uuid4().hex}"
    cell = pool.submit(kernel.execute, f"open({marker!r}, 'w').close()\nimport time\ntime.sleep({seconds!r})",
                       timeout=seconds + 30)
    cid = kernel.launched.extra["container"]
    assert wait_until(lambda: transport._run(cid, ["test", "-e", marker])[0] == 0, 30.0, interval=0.1,
                      what="the cell to run")
    return cell


@contextmanager
def tmpfs_at(where: Path, options: str, what: str) -> Iterator[Path]:
    """A tmpfs mounted on the dir ``where`` with ``options`` (``size=64k,ro``), unmounted at the end;
    the test is skipped (naming ``what``) where this machine does not let it mount one."""
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount {what} here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


PIDS_V1 = "/sys/fs/cgroup/pids"


@contextmanager
def pids_cgroup(max_pids: int) -> Iterator[str]:
    """A cgroup v1 pids group of its own (what a container's ``--pids-limit`` is) allowing ``max_pids``
    processes; its dir. Whatever is left in it at the end is killed, then it is removed. Skips
    without root or a v1 pids hierarchy."""
    if os.geteuid() != 0 or not os.path.exists(os.path.join(PIDS_V1, "cgroup.procs")):
        pytest.skip("needs root and a cgroup v1 pids hierarchy to give a job a pids limit")
    group = os.path.join(PIDS_V1, f"hermes-pids-{uuid.uuid4().hex[:8]}")
    os.mkdir(group)
    try:
        with open(os.path.join(group, "pids.max"), "w") as fh:
            fh.write(str(max_pids))
        yield group
    finally:
        deadline = time.monotonic() + 30
        while True:
            with open(os.path.join(group, "cgroup.procs")) as fh:
                left = [int(pid) for pid in fh.read().split()]
            if not left or time.monotonic() > deadline:
                break
            kill_quietly(left)
            time.sleep(0.05)
        os.rmdir(group)


@contextmanager
def fds_left(free: int) -> Iterator[None]:
    """This process with only ``free`` fds left below its (lowered) limit, for the block's duration."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    top = max(int(fd) for fd in os.listdir("/proc/self/fd")) + 1
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, top + 64), hard))
    hog: list[int] = []
    try:
        with contextlib.suppress(OSError):
            while True:
                hog.append(os.open(os.devnull, os.O_RDONLY))
        for _ in range(free):
            os.close(hog.pop())
        yield
    finally:
        for fd in hog:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
