"""Seen: a docker engine that stopped answering (dockerd hung: its socket accepts, nothing comes
back) held a cell with a 5 s budget for 129 s, and then the next cell for 120 s before its
``KernelStartError``, and ``shutdown()`` for 120 s: every probe of the runner's container (its
state, the kill's exec) waited out docker-py's 60 s read timeout, twice per step of the ladder,
and so did the kernel stream's check that its container still runs.

Now a probe of the engine waits :data:`~pytest_hermes_kernel.transports.docker.host.PROBE_TIMEOUT_S`
at most, and once one went unanswered the next probes say "cannot tell" at once for a while: the
cell is ``abandoned`` (the runner could not be reached, not seen gone) within the bounds a silent
ssh host has, and so are the next cell's refusal and the shutdown. Once the engine answers again,
the kernel is ended as after a ``docker unpause``.

Seen too: a kernel started while the engine was gone (dockerd stopped: its socket closes every
connection) raised a bare ``requests.exceptions.ConnectionError: ('Connection aborted.',
RemoteDisconnected(...))`` naming neither the engine nor the kernel; now a ``KernelStartError``
that names the engine.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_hermes_kernel import CellResult, KernelOptions
from pytest_hermes_kernel.errors import KernelStartError, TransportLostError
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.kernel.watchdog import WatchdogPolicy
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport
from pytest_hermes_kernel.transports.docker import host
from pytest_hermes_kernel.transports.docker.transport import DockerTransport
from tests.support import docker_cell_running, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: The engine behind the proxy: DOCKER_HOST's when it names a unix socket (the run's engine).
ENGINE_SOCKET = os.environ.get("DOCKER_HOST", "").removeprefix("unix://") if os.environ.get(
    "DOCKER_HOST", "").startswith("unix://") else "/var/run/docker.sock"
BUDGET_S = 1.0
FAST = WatchdogPolicy(interrupt_grace=0.5, kill_grace=0.5)
#: Seconds the timed-out cell may take in all (the ssh transport's bound on a silent host).
SETTLE_S = 30.0
#: Seconds the next cell's refusal and a shutdown may take while the engine is silent.
QUICK_S = 15.0
#: The runner a shutdown could not reach ends by its orphan timer once the engine answers again.
ORPHAN_TIMEOUT_S = 3.0
#: The silent-engine case's probe bound, shortened from ``host.PROBE_TIMEOUT_S`` (10 s): the cell
#: waits one unanswered probe whole, and the bound's length is not what is checked (the cell is
#: ``abandoned`` and the next ones are refused at once, whatever it is); long enough for a probe of
#: a loaded engine that does answer.
PROBE_S = 4.0


class FreezingEngine:
    """A unix socket in front of the docker engine that passes every byte until :attr:`frozen`
    is set, then holds them (an engine that hangs: connections stay open, nothing answers)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.frozen = threading.Event()
        self.gone = threading.Event()
        self.thawed = threading.Event()
        self.erring = threading.Event()
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(self.path)
        self.server.listen(64)
        self.sockets: list[socket.socket] = [self.server]
        self.threads: list[threading.Thread] = []
        self._thread(self._accept)

    def _thread(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self.gone.is_set():
                client.close()
                continue
            if self.erring.is_set():
                self._thread(self._refuse, client)
                continue
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(ENGINE_SOCKET)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                self._thread(self._pump, a, b)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                while self.frozen.is_set():
                    self.thawed.wait(0.05)
                sink.sendall(data)
        except OSError:
            pass
        try:
            sink.shutdown(socket.SHUT_WR)  # a half close passes on (an exec's stdin ends)
        except OSError:
            pass

    @staticmethod
    def _refuse(client: socket.socket) -> None:
        """Answer the request with docker's 500 (an engine that answers, with errors)."""
        body = b'{"message":"the engine is failing"}'
        try:
            client.recv(65536)
            client.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: "
                           + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        except OSError:
            pass
        client.close()

    def err(self) -> None:
        """Close every connection, and answer every new one's request with a 500 error."""
        self.erring.set()
        self.go()
        self.gone.clear()

    def go(self) -> None:
        """Close every connection and every new one (an engine that stopped)."""
        self.gone.set()
        for s in self.sockets[1:]:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def thaw(self) -> None:
        self.gone.clear()
        self.erring.clear()
        self.frozen.clear()
        self.thawed.set()

    def close(self) -> None:
        self.thaw()
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for thread in self.threads:
            thread.join(5.0)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreezingEngine]:
    """Module-scoped: the leak check after each test asks the engine through it too."""
    proxy = FreezingEngine(tmp_path_factory.mktemp("engine") / "engine.sock")
    yield proxy
    proxy.close()


@pytest.fixture(params=[True, False], ids=["server", "spawn"])
def behind(request: pytest.FixtureRequest, engine: FreezingEngine) -> Iterator[DockerTransport]:
    """A transport of its own on the engine behind the proxy; closed, and then no longer listed for
    the leak probes: later tests' checks (the proxy gone) would ask its engine."""
    transport = make_transport("docker", run_id=f"test-{uuid.uuid4().hex}", server=request.param,
                               docker_host=f"unix://{engine.path}")
    assert isinstance(transport, DockerTransport)
    try:
        yield transport
    finally:
        engine.thaw()
        close_transport(transport)
        forget_closed_transports()


def _timed(call):
    began = time.monotonic()
    try:
        return call(), time.monotonic() - began
    except KernelStartError as exc:
        return exc, time.monotonic() - began


@pytest.fixture
def quick_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """:data:`PROBE_S` for the probes of the transports made after it (asked before ``behind``)."""
    monkeypatch.setattr(host, "PROBE_TIMEOUT_S", PROBE_S)


@pytest.mark.hermes_allow_leaks("the engine proxy's threads serve the module; the test checks the kernel's end")
def test_a_cell_next_cell_and_shutdown_on_a_silent_engine_end_within_bounds(quick_probes, behind, engine):
    # keepalives that would see the silent stream first are off: the ladder is what is timed
    k = KernelHandle(behind, KernelOptions(watchdog=FAST, orphan_timeout=ORPHAN_TIMEOUT_S,
                                            keepalive_interval=30.0)).start()
    try:
        assert k.execute("x = 1").status == "ok"
        engine.frozen.set()

        result, took = _timed(lambda: k.execute("import time\ntime.sleep(60)", timeout=BUDGET_S))
        assert took <= SETTLE_S, f"the cell took {took:.1f} s on a silent engine"
        assert (result.status, result.watchdog) == ("timeout", "abandoned"), result.summary()
        assert "could not be reached" in result.kernel.note, result.kernel.note

        refused, took = _timed(lambda: k.execute("x"))
        assert isinstance(refused, KernelStartError), refused
        assert "was not seen gone and could not be ended" in str(refused), refused
        assert took <= QUICK_S, f"the next cell was refused after {took:.1f} s"

        ended, took = _timed(k.shutdown)
        assert took <= QUICK_S, f"shutdown() took {took:.1f} s on a silent engine"
        assert ended.confirmed is False, ended
    finally:
        engine.thaw()
    _wait_ended(behind, k)


def _wait_ended(transport: DockerTransport, k: KernelHandle) -> None:
    assert wait_until(lambda: _processes(transport, k) == [], ORPHAN_TIMEOUT_S + 10.0, interval=0.5,
                      what="the kernel's processes to end once the engine answers again")


def _a_sleeping_cell_whose_engine_then(behind: DockerTransport, k: KernelHandle, fault) -> CellResult:
    """Run a 60-s cell on ``k``, call ``fault()`` once it runs, and return the cell's result."""
    with ThreadPoolExecutor(1) as pool:
        cell = docker_cell_running(pool, k, behind)
        fault()
        return cell.result(timeout=SETTLE_S)


def _processes(transport: DockerTransport, k: KernelHandle) -> list[str] | None:
    """The kernel's processes; ``None`` while the probes still take the engine for silent."""
    try:
        return transport.kernel_processes(k.kernel_id)
    except TransportLostError:
        return None


@pytest.mark.hermes_allow_leaks("the engine proxy's threads serve the module; the test checks the kernel's end")
def test_a_kernel_started_while_the_engine_is_gone_is_a_start_error_naming_it(behind, engine):
    k = KernelHandle(behind, KernelOptions(orphan_timeout=ORPHAN_TIMEOUT_S)).start()
    try:
        engine.go()
        began = time.monotonic()
        with pytest.raises(KernelStartError, match=f"engine at unix://{engine.path}"):
            KernelHandle(behind, KernelOptions()).start()
        assert time.monotonic() - began <= QUICK_S
    finally:
        engine.thaw()
    k.shutdown()
    _wait_ended(behind, k)


@pytest.mark.hermes_allow_leaks("the engine proxy's threads serve the module; the test checks the kernel's end")
def test_a_cell_whose_engine_went_away_names_the_engine_in_its_loss(behind, engine):
    """Seen: dockerd SIGKILLed mid-cell: the cell came back ``died`` after the 10 s of re-attach
    tries with "closed: end of stream (the kernel runner or its relay is gone) (the runner could not
    be reached ...)", and the next cell's refusal "(the kill was not confirmed: is its host paused or
    unreachable?)": neither named the engine that had gone (each try had met requests'
    ``ConnectionError``). Both name it now, as a kernel start does."""
    k = KernelHandle(behind, KernelOptions(orphan_timeout=ORPHAN_TIMEOUT_S, reconnect_timeout=2.0)).start()
    try:
        result = _a_sleeping_cell_whose_engine_then(behind, k, engine.go)
        assert result.status == "died", result.summary()
        assert f"the docker engine at unix://{engine.path} did not answer" in result.kernel.note, result.kernel.note

        refused, took = _timed(lambda: k.execute("1"))
        assert isinstance(refused, KernelStartError), refused
        assert f"the docker engine at unix://{engine.path}" in str(refused), refused
        assert took <= QUICK_S, f"the next cell was refused after {took:.1f} s"
    finally:
        engine.thaw()
    k.shutdown()
    _wait_ended(behind, k)


@pytest.mark.hermes_allow_leaks("the engine proxy's threads serve the module; the test removes its container itself")
def test_a_container_the_run_could_not_remove_is_named_with_its_engine_and_its_removal(
        engine, caplog: pytest.LogCaptureFixture):
    """Seen: the engine's socket went away (moved, its dockerd gone) before the run's end: the
    run's container stayed up on the engine, and all that was said of it, after pytest's summary,
    was "could not remove container 8df6f23451d1: ('Connection aborted.', FileNotFoundError(2, 'No
    such file or directory'))": neither the engine nor what removes it."""
    transport = make_transport("docker", run_id=f"test-{uuid.uuid4().hex}", container="fresh",
                               docker_host=f"unix://{engine.path}")
    k = KernelHandle(transport, KernelOptions(orphan_timeout=ORPHAN_TIMEOUT_S)).start()
    cid = k.launched.extra["container"]
    os.rename(engine.path, f"{engine.path}.away")  # the engine's socket is gone (its streams stay up)
    try:
        with caplog.at_level("WARNING", logger="pytest_hermes_kernel.transports.docker.host"):
            k.shutdown()  # through its stream, still up; its fresh container's removal is refused
            close_transport(transport)
        said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("could not remove container")]
        assert len(said) == 1, said
        assert f"on the docker engine at unix://{engine.path}: the docker engine at unix://{engine.path} did not " \
               "answer" in said[0] and f"`docker rm -f {cid[:12]}`" in said[0], said[0]
        assert "Connection aborted" not in said[0], said[0]
    finally:
        os.rename(f"{engine.path}.away", engine.path)
        forget_closed_transports()
        from pytest_hermes_kernel.containers.engines import engine_client
        from pytest_hermes_kernel.containers.lifecycle import remove_container

        client = engine_client(f"unix://{ENGINE_SOCKET}")
        try:
            remove_container(cid, client=client)
        finally:
            client.close()


@pytest.mark.hermes_allow_leaks("the engine proxy's threads serve the module; the test checks the kernel's end")
def test_a_cell_whose_engine_answers_errors_says_what_it_answered(behind, engine):
    """Seen: an engine that answered every request with ``500 Server Error`` once a cell's stream
    broke: the loss said "the kernel runner (pid 22) in ... is not seen: the engine did not
    answer", of an engine that had answered, with an error."""
    k = KernelHandle(behind, KernelOptions(orphan_timeout=ORPHAN_TIMEOUT_S, reconnect_timeout=2.0)).start()
    try:
        result = _a_sleeping_cell_whose_engine_then(behind, k, engine.err)
        assert result.status == "died", result.summary()
        note = result.kernel.note or ""
        assert "the engine answered 500 the engine is failing" in note and "did not answer" not in note, note
    finally:
        engine.thaw()
    k.shutdown()
    _wait_ended(behind, k)


@pytest.mark.hermes_allow_leaks("the engine proxy's threads serve the module")
def test_the_leak_probe_of_an_engine_that_answers_errors_says_what_it_answered(behind, engine):
    """Seen: the leak check's "not checked" line of such an engine was docker-py's "APIError: 500
    Server Error for http+docker://localhost/v1.41/containers/json?limit=-1&all=1&size=0&trunc_cmd=0
    &filters=%7B%22label%22...: Internal Server Error (...)"."""
    from pytest_hermes_kernel.errors import TransportUnavailableError

    engine.err()
    try:
        with pytest.raises(TransportUnavailableError) as caught:
            behind.leak_snapshot(os.getpid())
    finally:
        engine.thaw()
    assert str(caught.value) == (f"the docker engine at unix://{engine.path} could not list: the engine answered 500 "
                                 "the engine is failing"), caught.value
