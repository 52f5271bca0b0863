"""filecell: what a backend author sees when their execute backend gets something wrong.

Each case is a backend with one defect found by running the contract suite against it (a
sandbox whose commands get no ``PATH``, one that keeps no files between commands, one that cuts
its output short, one that starts raising); the kernel works where it can, and the error the
user gets names the defect instead of a symptom.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import KernelHandle, KernelStartError
from pytest_hermes_kernel.errors import FileTransferError
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport


@pytest.fixture
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A short kernel root of this test (a unix socket path under it must fit in 108 bytes)."""
    path = f"/tmp/hermes-stumble-{os.getpid()}-{os.urandom(3).hex()}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Sandbox:
    """``sh -c`` through ``subprocess``, as the README's example backend."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        return (128 - done.returncode if done.returncode < 0 else done.returncode), done.stdout + done.stderr

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AfterEachCommand(Sandbox):
    """A sandbox that does something to ``root`` once each command has returned (:meth:`after`)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        try:
            return super().execute(cmd, timeout)
        finally:
            self.after()

    def after(self) -> None:
        raise NotImplementedError


class KeepsNoFiles(AfterEachCommand):
    """Every command starts on a filesystem where nothing the earlier ones wrote under ``root`` is left."""

    def after(self) -> None:
        for name in os.listdir(self.root) if os.path.isdir(self.root) else ():
            shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)


class CutsOutput(Sandbox):
    """Returns the first 16 KiB of every command's output, silently."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        code, out = super().execute(cmd, timeout)
        return code, out[:16384]


class KeepsTheTail(Sandbox):
    """Returns the last 16 KiB of every command's output, silently (as sandbox APIs that cap a log)."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        code, out = super().execute(cmd, timeout)
        return code, out[-16384:]


class EndsCommandsAt2s(Sandbox):
    """Ends every command after 2 s at most, whatever timeout it is asked for, and returns ``(124, "")`` as
    the README's example backend does at a timeout (sandbox APIs cap a command's time)."""

    limit_s: float | None = 2.0

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        if self.limit_s is None:  # (lifted: see started_then_capped)
            return super().execute(cmd, timeout)
        try:
            return super().execute(cmd, self.limit_s if timeout is None else min(timeout, self.limit_s))
        except subprocess.TimeoutExpired:
            return self.timed_out()

    def timed_out(self) -> tuple[int, str]:
        return 124, ""


class RaisesAt2s(EndsCommandsAt2s):
    """As :class:`EndsCommandsAt2s`, but raises ``TimeoutError`` at its limit (the protocol allows both)."""

    def timed_out(self) -> tuple[int, str]:
        raise TimeoutError(f"sandbox: the command ran over {self.limit_s} s")


def started_then_capped(sandbox: EndsCommandsAt2s, root: str) -> KernelHandle:
    """A kernel started through ``sandbox`` with its cap lifted, then capped: the launch (one
    command that starts three Pythons, well under 1 s idle) ran over 2 s once beside two other
    suites' runs ("filecell launch through RaisesAt2s() failed: TimeoutError"), and the start is
    not what the tests with this cap are about: the polls of a cell longer than it are."""
    limit, sandbox.limit_s = sandbox.limit_s, None
    try:
        return KernelHandle(FileCellTransport(sandbox, root=root)).start()
    finally:
        sandbox.limit_s = limit


class HangsOnCue(Sandbox):
    """Once :attr:`hang` is set, every call blocks until :attr:`release` is set (a dead connection with
    no timeout of its own), then raises."""

    def __init__(self) -> None:
        self.hang, self.release = threading.Event(), threading.Event()

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        if self.hang.is_set():
            self.release.wait()
            raise ConnectionError("the connection was dead")
        return super().execute(cmd, timeout)


class ReturnsBytes(Sandbox):
    """Returns the output undecoded."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        code, out = super().execute(cmd, timeout)
        return code, out.encode()  # type: ignore[return-value]


class LosesOutput(Sandbox):
    """Runs every command and returns its status with no output (a sandbox API that drops it)."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        return super().execute(cmd, timeout)[0], ""


class EndsBackgroundProcesses(AfterEachCommand):
    """Kills what a command left running under ``root`` once it returns (a sandbox that ends its exec's cgroup)."""

    def after(self) -> None:
        for pid in processes_under(self.root):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def processes_under(root: str) -> list[int]:
    """Pids of this machine's processes with ``root/`` in their command line."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if f"{root}/".encode() in fh.read():
                    found.append(int(name))
        except (OSError, ValueError):
            pass
    return found


class FailsAfter(Sandbox):
    """Raises on every call after the first ``calls``."""

    def __init__(self, calls: int) -> None:
        self.left = calls

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        self.left -= 1
        if self.left < 0:
            raise ConnectionError("sandbox quota exceeded")
        return super().execute(cmd, timeout)


def test_a_backend_whose_commands_have_no_path_still_starts_kernels(root):
    """With an empty environment the far side's ``sys.executable`` is ``''``: the launch used it as
    the client's interpreter and failed with ``sh: : Permission denied``, and a cell that started
    ``sys.executable`` failed with ``PermissionError: ''``."""
    k = KernelHandle(FileCellTransport(LocalShellBackend(env={}), root=root)).start()
    try:
        assert k.execute("6 * 7").value == "42"
        r = k.execute("import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'print(6 * 7)'], "
                      "capture_output=True, text=True, check=True).stdout")
        assert r.value == repr("42\n"), r.summary()  # a cell can start its own interpreter
    finally:
        k.shutdown()


@pytest.mark.parametrize(("sandbox", "said"), [
    (KeepsNoFiles, ("did not keep the kernel dir from one execute to the next", "same filesystem")),
    (EndsBackgroundProcesses, ("background processes must outlive their command",)),
], ids=["keeps-no-files", "ends-background-processes"])
def test_a_backend_that_breaks_the_kernels_life_is_named_in_the_death_note(root, sandbox, said):
    k = KernelHandle(FileCellTransport(sandbox(root), root=root)).start()
    try:
        r = k.execute("1")
    finally:
        k.shutdown()

    assert r.status == "died"
    for words in said:
        assert words in r.kernel.note, r.kernel.note


def test_a_backend_that_cuts_output_short_fails_a_download_saying_so(root, tmp_path):
    k = KernelHandle(FileCellTransport(CutsOutput(), root=root)).start()
    try:
        assert k.execute("open('big.bin', 'wb').write(bytes(200_000))").status == "ok"
        with pytest.raises(FileTransferError) as caught:
            k.download("big.bin", tmp_path / "big.bin")
    finally:
        k.shutdown()

    text = str(caught.value)
    assert "read big.bin through CutsOutput() was cut short or damaged" in text, text
    assert "must return a command's whole output" in text, text


def test_a_backend_that_starts_raising_fails_the_start_with_its_error_and_what_execute_must_do(root):
    transport = FileCellTransport(FailsAfter(0), root=root)

    with pytest.raises(KernelStartError) as caught:
        KernelHandle(transport).start()

    text = str(caught.value)
    assert "failed: ConnectionError: sandbox quota exceeded" in text, text
    # what execute must do (aadab55: raising when it could not run a command is allowed, not blamed)
    assert "a command that ran and failed returns its exit status and output" in text, text


@pytest.mark.parametrize(("sandbox", "said"), [
    (KeepsTheTail, "the backend cut the start off a poll's output"),
    (CutsOutput, "the client's output stops before its end line after 16384 characters: the backend cut it short"),
], ids=["keeps-the-tail", "keeps-the-head"])
def test_a_backend_that_cuts_a_cells_output_runs_it_once_and_says_so(root, tmp_path, sandbox, said):
    """A result bigger than the backend's cap: with the begin line cut off, the poll counted as one whose
    client never sent the cell, so the cell was sent again, ran three times, and the kernel died
    of "3 polls failed in a row; last: no client output (Hh4eHh4e...)" (found by a breaker)."""
    runs = tmp_path / "runs"
    k = KernelHandle(FileCellTransport(sandbox(), root=root)).start()
    try:
        r = k.execute(f"open({str(runs)!r}, 'a').write('1')\nprint('x' * 100_000)")
    finally:
        k.shutdown()

    assert runs.read_text() == "1", "the cell ran more than once"
    assert r.status == "died" and said in r.kernel.note, r.kernel.note
    assert "must return a command's whole output" in r.kernel.note, r.kernel.note


@pytest.mark.parametrize("sandbox", [EndsCommandsAt2s, RaisesAt2s], ids=["exit-124", "raises"])
def test_a_cell_longer_than_the_backends_time_limit_runs_once_and_returns_its_result(root, tmp_path, sandbox):
    """The poll carrying the cell was ended at 2 s with its output lost: the host could not tell
    whether the cell was sent. At exit 124 it sent it again, and the runner refused it: the user saw
    status "error", "the kernel runner refused the cell, which did not run: a cell is already running",
    for a cell that ran (its result lost); at a ``TimeoutError`` the kernel was killed ("a poll
    carrying frames failed"), its state lost. Now the runner knows a cell sent again for the same cell."""
    runs = tmp_path / "runs"
    k = started_then_capped(sandbox(), root)
    try:
        r = k.execute(f"open({str(runs)!r}, 'a').write('1')\nimport time; time.sleep(3)\n6 * 7")
        assert (r.status, r.value) == ("ok", "42"), r.summary()
        assert k.execute("7").value == "7"  # the next cell is not mistaken for the re-sent one
    finally:
        k.shutdown()

    assert runs.read_text() == "1", "the cell ran more than once"


def test_a_cell_far_longer_than_the_backends_time_limit_names_the_poll_window(root):
    """It died of "3 polls failed in a row; last: no client output ()", which named neither the
    backend's time limit nor the setting that fits the polls under it."""
    k = started_then_capped(EndsCommandsAt2s(), root)
    try:
        r = k.execute("import time; time.sleep(60)")
    finally:
        k.shutdown()

    assert r.status == "died", r.summary()
    assert "the backend ended the poll at a time limit of its own after 2." in r.kernel.note, r.kernel.note
    assert "give FileCellTransport a poll_window_s under the backend's command time limit" in r.kernel.note


def test_a_backend_whose_calls_hang_cannot_hang_a_cells_timeout_or_the_shutdown(root, monkeypatch):
    """``execute("1", timeout=1)`` never returned: the timeout ladder's interrupt waited for the hung
    backend (and the kill, the liveness probe and the shutdown after it would have too)."""
    from pytest_hermes_kernel.transports.filecell import transport as module

    for name in ("EXECUTE_OVERRUN_S", "PROBE_TIMEOUT_S", "KILL_TIMEOUT_S", "DROP_TIMEOUT_S"):
        monkeypatch.setattr(module, name, 0.5, raising=False)  # the bounds, shortened: each call is let go after 1 s
    backend = HangsOnCue()
    k = KernelHandle(FileCellTransport(backend, root=root)).start()
    outcome: list[object] = []
    try:
        backend.hang.set()
        runs = threading.Thread(target=lambda: outcome.extend([k.execute("1", timeout=1), k.shutdown()]), daemon=True)
        runs.start()
        runs.join(60)
        assert outcome and not runs.is_alive(), "the cell or the shutdown hung with the backend"
    finally:
        backend.hang.clear()
        backend.release.set()
        k.shutdown()
        for pid in processes_under(root):  # the runner its kill could not reach (the backend hung)
            os.kill(pid, signal.SIGKILL)

    result = outcome[0]
    assert result.status == "died", result.summary()  # type: ignore[attr-defined]
    assert "did not return from execute within 1 s" in result.kernel.note, result.kernel.note  # type: ignore[attr-defined]
    assert "it must end a command at its timeout" in result.kernel.note  # type: ignore[attr-defined]


def test_a_backend_whose_launch_hangs_fails_the_start_in_bounded_time_saying_so(root, monkeypatch):
    """The launch was the one backend call left unbounded: a backend whose ``execute`` never
    returned hung ``start()`` (and the fixture, and the test run) forever."""
    from pytest_hermes_kernel.transports.filecell import transport as module

    for name in ("EXECUTE_OVERRUN_S", "PROBE_TIMEOUT_S", "KILL_TIMEOUT_S"):
        monkeypatch.setattr(module, name, 0.5)  # the bounds, shortened: each call is let go after 1 s
    backend = HangsOnCue()
    backend.hang.set()
    outcome: list[BaseException] = []

    def start() -> None:
        try:
            KernelHandle(FileCellTransport(backend, root=root, launch_timeout=1.0)).start()
        except BaseException as exc:  # noqa: BLE001 - looked at below
            outcome.append(exc)

    starts = threading.Thread(target=start, daemon=True)
    try:
        starts.start()
        starts.join(60)
        assert not starts.is_alive(), "start() hung with the backend's launch"
    finally:
        backend.release.set()

    assert outcome and isinstance(outcome[0], KernelStartError), outcome
    text = str(outcome[0])
    assert "did not return from execute within 1.5 s (its timeout was 1 s)" in text, text
    assert "it must end a command at its timeout" in text, text
    assert processes_under(root) == []


def test_a_transfer_into_a_kernel_dir_that_did_not_last_names_the_working_dir(root, tmp_path):
    (tmp_path / "f.txt").write_text("x")
    k = KernelHandle(FileCellTransport(KeepsNoFiles(root), root=root)).start()
    kernel_dir = k.launched.kernel_dir
    try:
        with pytest.raises(FileTransferError) as caught:
            k.upload(tmp_path / "f.txt", "f.txt")
    finally:
        k.shutdown()

    assert str(caught.value) == f"the working dir {kernel_dir} does not exist", str(caught.value)


def test_a_backend_that_returns_bytes_fails_the_start_saying_what_execute_must_return(root):
    with pytest.raises(KernelStartError) as caught:
        KernelHandle(FileCellTransport(ReturnsBytes(), root=root)).start()

    text = str(caught.value)
    assert "execute returned (0, b'" in text, text
    assert "it must return (exit status, output text), the output decoded (UTF-8)" in text, text
    assert processes_under(root) == [], "the runner the launch started was left behind"


def test_a_backend_that_loses_all_output_fails_the_start_saying_so(root):
    """The start error said the backend needs sh, python3 and a writable root: the cause was the
    output the backend dropped (found by a backend-contributor helper)."""
    with pytest.raises(KernelStartError) as caught:
        KernelHandle(FileCellTransport(LosesOutput(), root=root)).start()

    text = str(caught.value)
    assert "the launch printed nothing at all" in text and "the backend lost the command's output" in text, text
    assert "needs sh, python3" not in text, text
    assert processes_under(root) == [], "the runner the launch started was left behind"


class AppendsToCommands(Sandbox):
    """A sandbox wrapper that adds its own step after each command (``; echo ...``): it lands on
    the last line, the end line of a poll's here-document of parameters."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        return super().execute(cmd + "; echo sandbox-done-$?", timeout)


def test_a_backend_that_appends_to_each_command_still_runs_cells_and_tools(root):
    """A poll's parameters (its frames) go to the client as a here-document; a step appended to
    the command spoils its end line, and the client still reads its one line of parameters."""
    transport = FileCellTransport(AppendsToCommands(), root=root)
    try:
        with KernelHandle(transport, tools={"f": lambda: 41}) as k:
            r = k.execute("import hermes_tools\nx = hermes_tools.f() + 1\nx")
            assert (r.status, r.value) == ("ok", "42")
            assert k.execute("x * 2").value == "84"
    finally:
        transport.close()


class BreaksWhenTold(Sandbox):
    """Raises its own error on every call once ``broken`` is set (a sandbox whose quota ran out)."""

    broken = False

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        if self.broken:
            raise ConnectionError("sandbox quota exceeded")
        return super().execute(cmd, timeout)


def test_a_backend_that_starts_raising_mid_transfer_fails_it_naming_the_path(root, tmp_path):
    """The backend's own ConnectionError came up bare from ``download``/``upload``, naming no path."""
    sandbox = BreaksWhenTold()
    k = KernelHandle(FileCellTransport(sandbox, root=root)).start()
    (tmp_path / "f.txt").write_text("x")
    try:
        assert k.execute("open('a.txt', 'w').write('a')").status == "ok"
        sandbox.broken = True
        caught = []
        for move in (lambda: k.download("a.txt", tmp_path / "a.txt"), lambda: k.upload(tmp_path / "f.txt", "f.txt")):
            with pytest.raises(FileTransferError) as info:
                move()
            caught.append(info.value)
        sandbox.broken = False
    finally:
        sandbox.broken = False
        k.shutdown()

    assert [e.path for e in caught] == ["a.txt", "f.txt"], caught
    for e in caught:
        assert "BreaksWhenTold()" in str(e) and "ConnectionError: sandbox quota exceeded" in str(e), str(e)
        assert isinstance(e.__cause__, ConnectionError)
    assert sorted(os.listdir(tmp_path)) == ["f.txt"]
