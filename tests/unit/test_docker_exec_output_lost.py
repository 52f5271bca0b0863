"""The docker transport reads the container user's uid and gid with one ``id`` exec before it
puts a kernel dir in the container (B45). A loaded engine sometimes answers that exec with exit
code 0 and its output lost or cut (moby/moby#27289, docker/docker-py#2042): a CI helper saw
``KernelStartError: could not read the container user's uid:`` with nothing after it in 1 of 3
loaded runs of ``test_docker_keep.py``, and 5 in 1200 direct reads under load.

The answer must end with a marker line; one without it is asked again, and a read that never
completes says what came back. The same holds for the xdist crash reaper's scan of a crashed
worker's kernels (a lost answer there left them running until their orphan timer); the
transport's own scans are tested against a real engine in
``tests/transports/test_kernel_processes_never_blind.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.transports.detached import SCAN_END_LINE, SCAN_TRIES
from pytest_hermes_kernel.transports.docker.transport import container_owner


def _transport(answers: list[tuple[int | None, bytes, bytes]]) -> SimpleNamespace:
    """What container_owner uses of a DockerTransport, answering each exec from ``answers``."""
    asked: list[list[str]] = []

    def run(container_id: str, argv: list[str], *, user: str = "root") -> tuple[int | None, bytes, bytes]:
        asked.append(argv)
        return answers.pop(0)

    return SimpleNamespace(engine="unix:///fake.sock", _owners={}, _run=run, asked=asked)


def _complete(uid: int, gid: int) -> tuple[int, bytes, bytes]:
    return 0, f"{uid}\n{gid}\n".encode() + SCAN_END_LINE, b""


@pytest.mark.parametrize("lost", [
    (0, b"", b""),                  # output lost, exit 0
    (0, b"1000\n", b""),            # output cut after the uid
    (0, b"1000\n100", b""),         # cut inside the gid: must not be read as gid 100
])
def test_an_answer_lost_or_cut_by_the_engine_is_asked_again(lost: tuple[int, bytes, bytes]) -> None:
    t = _transport([lost, _complete(1000, 1001)])
    assert container_owner(t, "short-name") == (1000, 1001)
    assert len(t.asked) == 2


def test_the_owner_is_read_once_per_container() -> None:
    t = _transport([_complete(0, 0)])
    assert container_owner(t, "short-name") == (0, 0)
    assert container_owner(t, "short-name") == (0, 0)
    assert len(t.asked) == 1


def test_a_read_that_never_completes_says_what_came_back() -> None:
    t = _transport([(0, b"", b"")] * SCAN_TRIES)
    with pytest.raises(KernelStartError) as info:
        container_owner(t, "short-name")
    message = str(info.value)
    assert "exit code 0" in message and "stdout b''" in message
    assert f"{SCAN_TRIES} tries" in message
    assert len(t.asked) == SCAN_TRIES


def test_a_failing_exec_reports_its_exit_code_and_stderr() -> None:
    t = _transport([(126, b"", b"OCI runtime exec failed")] * SCAN_TRIES)
    with pytest.raises(KernelStartError, match=r"exit code 126.*OCI runtime exec failed"):
        container_owner(t, "short-name")


class _Container:
    """What the xdist crash reaper uses of a docker-py container: ``exec_run`` answering in turn."""

    id = "c" * 64
    attrs: dict = {}

    def __init__(self, answers: list[tuple[int, bytes]]) -> None:
        self.answers, self.asked = answers, []

    def exec_run(self, argv: list[str], user: str = "") -> tuple[int, bytes]:
        self.asked.append(argv)
        return self.answers.pop(0)


def test_the_crash_reapers_scan_is_asked_again_when_its_answer_was_lost() -> None:
    from pytest_hermes_kernel.plugin.crashes import _reap_in

    row = b"4242\t777\tkid\tpython3 -B runner.pyz serve\n"
    container = _Container([(0, b""), (0, row + SCAN_END_LINE), (0, b"")])  # lost, complete, the kill
    assert _reap_in(container, 1234) == 1, "the kernel the lost answer hid is still killed"
    assert container.asked[2][-2:] == ["4242", "777"]


def test_the_crash_reapers_scan_never_complete_is_an_error_not_nothing_to_kill() -> None:
    from pytest_hermes_kernel.plugin.crashes import _reap_in

    with pytest.raises(OSError, match="no complete answer"):
        _reap_in(_Container([(0, b"4242\t777\tk")] * 3), 1234)
