"""The contract suite fails a backend that lies, one lie at a time.

Each liar is a :class:`LocalTransport` (or its :class:`LocalFiles`, or an execute backend) with
one thing wrong that no case of the suite used to notice, so the whole suite passed it: a blind
process listing, a kill of the runner alone, ``alive()`` for a dead runner, exit status 0 for a
runner that failed, the host's environment handed to the kernel, a stream that drops large
frames, a dropped working dir, a failed command's stderr dropped, a command put in argv (where
``ps`` shows a launch's env), an upload that drops all but
its first chunk, a download that skips files, a frozen runner counted gone and never killed. Each
test runs the contract case that must catch the lie against the liar and expects it to fail,
saying what is wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.contract import (backend_protocol, environment, lifecycle, replies, starting, transfers,
                                          watchdog)
from pytest_hermes_kernel.kernel.files import Entry
from pytest_hermes_kernel.procs import processes_with_env
from pytest_hermes_kernel.transports.files import LocalFiles
from pytest_hermes_kernel.transports.local import LocalTransport


class BlindTransport(LocalTransport):
    """Lie: nothing of any kernel is ever running."""

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        return []


class RunnerOnlyKill(LocalTransport):
    """Lie: ``kill`` SIGKILLs the runner alone and says the kernel is gone."""

    def kill(self, launched: Any) -> bool:
        with contextlib.suppress(ProcessLookupError):
            os.kill(launched.pid, signal.SIGKILL)
        return launched.extra["runner"].wait(5.0)


class AlwaysAlive(LocalTransport):
    """Lie: ``alive()`` says True for a dead runner (``seen_gone`` still tells the truth)."""

    def alive(self, launched: Any) -> bool:
        return True

    def seen_gone(self, launched: Any) -> bool:
        return not super().alive(launched)


def _stopped(pid: int | None) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


class FrozenCountsAsGone(LocalTransport):
    """Lie: liveness and kill go through the runner itself, so a frozen runner (SIGSTOP) counts as
    gone: ``alive()`` says False and ``kill()`` True, and it is never killed."""

    def kill(self, launched: Any) -> bool:
        return True if _stopped(launched.pid) else super().kill(launched)

    def alive(self, launched: Any) -> bool:
        return super().alive(launched) and not _stopped(launched.pid)


class ExitsZero(LocalTransport):
    """Lie: a runner that ended says its exit status was 0."""

    def exit_status(self, launched: Any, timeout: float) -> int | None:
        super().exit_status(launched, timeout)
        return 0


class HostEnvTransport(LocalTransport):
    """Lie: the kernel starts with the host's ``os.environ`` under its own env."""

    def launch(self, spec: Any) -> Any:
        return super().launch(dataclasses.replace(spec, env={**os.environ, **spec.env}))


class DropsLargeFrames(LocalTransport):
    """Lie: the stream to the kernel silently drops every write over 64 KiB (a cell's big source,
    a tool's big result)."""

    def launch(self, spec: Any) -> Any:
        launched = super().launch(spec)
        send = launched.stream.send
        launched.stream.send = lambda data: None if len(data) > 64 * 1024 else send(data)
        return launched


class NoCwdTransport(LocalTransport):
    """Lie: the kernel's ``cwd`` is dropped: cells run in the kernel dir."""

    def launch(self, spec: Any) -> Any:
        return super().launch(dataclasses.replace(spec, cwd=None, config={**spec.config, "cwd": None}))


class FirstChunkOnly(LocalFiles):
    """Lie: an upload writes a file's first chunk and drops the rest."""

    def write_file(self, parts: tuple[str, ...], chunks: Iterator[bytes]) -> None:
        for _ in chunks:
            pass


class NoEmptyFiles(LocalFiles):
    """Lie: a download's listing leaves out empty files."""

    def list_tree(self, parts: tuple[str, ...]) -> list[Entry]:
        return [e for e in super().list_tree(parts) if not (e.kind == "file" and e.size == 0)]


class StderrOnlyOnSuccess:
    """Lie (an execute backend): a failed command's stderr is dropped."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=timeout, check=False)
        return done.returncode, done.stdout + (done.stderr if done.returncode == 0 else "")


class CommandInArgv:
    """Lie (an execute backend): the command is the shell's argument (``sh -c cmd``), so ``ps``
    shows it, a launch's env (secrets) with it; every other rule is kept."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        done = subprocess.run(["sh", "-c", cmd], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, check=False)
        return done.returncode, done.stdout + done.stderr


class ShellOnlyAtTimeout:
    """Lie (an execute backend): a command past its timeout has only its shell killed; what the
    shell started runs on (B36's leftover descendant). Every other rule is kept."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
            proc = subprocess.Popen(["sh"], stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, text=True)
            proc.stdin.write(cmd)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                return 124, ""
            out.seek(0)
            return code, out.read()


def _files_liar(files: type[LocalFiles]) -> type[LocalTransport]:
    class FilesLiar(LocalTransport):
        def files(self, launched: Any, workdir: str) -> LocalFiles:
            return files(workdir)

    return FilesLiar


@pytest.fixture
def liar(start: Callable[..., KernelHandle]) -> Iterator[Callable[..., KernelHandle]]:
    """``liar(cls, **options)``: a kernel on a new transport of class ``cls`` (spawn path); what
    the liar's kernels left running is killed after the test."""
    made: list[tuple[LocalTransport, KernelHandle]] = []

    def make(cls: type[LocalTransport], **options: Any) -> KernelHandle:
        transport = next((t for t, _ in made if type(t) is cls), None) or cls(server=False)
        kernel = start(transport, **options)
        made.append((transport, kernel))
        return kernel

    yield make
    for transport, kernel in made:
        kernel.shutdown()
        for line in processes_with_env("HERMES_KERNEL_ID", kernel.kernel_id):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
        transport.close()


def test_a_blind_process_listing_fails_the_contract(liar: Callable[..., KernelHandle]) -> None:
    with pytest.raises(AssertionError, match="kernel_processes does not list"):
        lifecycle.test_the_transport_lists_every_process_of_its_kernel(liar(BlindTransport))


def test_a_kill_of_the_runner_alone_fails_the_contract(liar: Callable[..., KernelHandle]) -> None:
    with pytest.raises(AssertionError, match="Transport.kill left processes of the kernel"):
        lifecycle.test_kill_ends_every_process_of_the_kernel(liar(RunnerOnlyKill))


def test_alive_for_a_killed_runner_fails_the_contract(liar: Callable[..., KernelHandle]) -> None:
    with pytest.raises(AssertionError, match="alive\\(\\) must say False for a runner the transport killed"):
        lifecycle.test_a_runner_is_seen_gone_only_once_it_ended(liar(AlwaysAlive))


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # the old runner's Popen, dropped as gone by the lie
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_frozen_runner_counted_gone_but_left_running_fails_the_contract(liar: Callable[..., KernelHandle]) -> None:
    """The case's own clean-up SIGKILLed the frozen runner before it checked that it was gone, so
    the whole suite passed this liar, whose reset left the old runner and worker behind."""
    with pytest.raises(AssertionError, match="the frozen runner's processes .* still run"):
        watchdog.test_unreachable_runner_is_killed_from_outside_and_replaced(
            lambda **options: liar(FrozenCountsAsGone, **options))


def test_exit_status_0_for_a_failed_runner_fails_the_contract(liar: Callable[..., KernelHandle]) -> None:
    transport = ExitsZero(server=False)  # the case lists what the failed start left through it
    try:
        with pytest.raises(AssertionError, match="must give the runner's exit status, 1.*exit code 0"):
            starting.test_runner_exiting_at_start_fails_fast_with_its_exit_status(
                lambda **options: liar(ExitsZero, **options), transport)
    finally:
        transport.close()


def test_the_hosts_environment_in_the_kernel_fails_the_contract(liar: Callable[..., KernelHandle],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AssertionError, match="HERMES_CONTRACT_API_TOKEN.*reached the kernel"):
        environment.test_host_variables_reach_the_kernel_only_as_scrubbed(
            lambda **options: liar(HostEnvTransport, **options), monkeypatch)


def test_a_stream_that_drops_large_frames_fails_the_contract(liar: Callable[..., KernelHandle],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replies, "LARGE_CELL_BUDGET_S", 3.0)  # the lost frame's cell waits out its budget
    with pytest.raises(AssertionError, match="3000000-character tool result: status=timeout"):
        replies.test_a_large_cell_source_and_tool_result_reach_the_kernel_whole(
            lambda **options: liar(DropsLargeFrames, **options))


def test_a_dropped_working_dir_fails_the_contract(liar: Callable[..., KernelHandle]) -> None:
    with pytest.raises(AssertionError, match="not in the kernel's cwd '/'"):
        lifecycle.test_cells_run_in_the_working_dir_given_and_keep_it_after_a_restart(
            lambda **options: liar(NoCwdTransport, **options))


@pytest.mark.parametrize("files, says", [(FirstChunkOnly, "what the kernel read is not what was uploaded"),
                                         (NoEmptyFiles, "the download brought")],
                         ids=["upload-drops-chunks", "download-skips-empty-files"])
def test_a_transfer_that_loses_files_or_data_fails_the_contract(liar: Callable[..., KernelHandle], tmp_path: Path,
                                                                 files: type[LocalFiles], says: str) -> None:
    with pytest.raises(AssertionError, match=says):
        transfers.test_a_tree_round_trips_through_the_kernel(liar(_files_liar(files)), None, tmp_path)


def test_a_backend_that_drops_a_failed_commands_stderr_fails_the_contract() -> None:
    with pytest.raises(AssertionError, match=r"lost the command's stderr \(status 3\)"):
        backend_protocol.test_backend_returns_stdout_and_stderr(StderrOnlyOnSuccess(), 3)


def test_a_backend_that_puts_the_command_in_argv_fails_the_contract() -> None:
    with pytest.raises(AssertionError, match=r"execute put the command text on a process's command line"):
        backend_protocol.test_a_command_is_on_no_process_command_line(CommandInArgv(), "execute")


def test_a_backend_that_ends_only_the_shell_at_its_timeout_fails_the_contract(tmp_path: Path) -> None:
    """The case's watch for the flag of the shell's child ends early only once that child is seen
    gone (nineteenth session): a child that runs on is still watched until it touches the flag."""
    with pytest.raises(AssertionError, match=r"ran on after the call returned"):
        backend_protocol.test_backend_ends_the_whole_command_at_its_timeout(ShellOnlyAtTimeout(),
                                                                            SimpleNamespace(root=str(tmp_path)))
