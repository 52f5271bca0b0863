"""The docker transport reads the container user's uid and gid with one ``id`` exec before it
puts a kernel dir in the container (B45). A loaded engine sometimes answers that exec with exit
code 0 and its output lost or cut (moby/moby#27289, docker/docker-py#2042): a CI helper saw
``KernelStartError: could not read the container user's uid:`` with nothing after it in 1 of 3
loaded runs of ``test_docker_keep.py``, and 5 in 1200 direct reads under load.

The answer must end with a marker line; one without it is asked again, and a read that never
completes says what came back.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.transports.docker import transport as docker_transport
from pytest_hermes_kernel.transports.docker.transport import container_owner


def _transport(answers: list[tuple[int | None, bytes, bytes]]) -> SimpleNamespace:
    """What container_owner uses of a DockerTransport, answering each exec from ``answers``."""
    asked: list[list[str]] = []

    def run(container_id: str, argv: list[str], *, user: str = "root") -> tuple[int | None, bytes, bytes]:
        asked.append(argv)
        return answers.pop(0)

    return SimpleNamespace(engine="unix:///fake.sock", _owners={}, _run=run, asked=asked)


def _complete(uid: int, gid: int) -> tuple[int, bytes, bytes]:
    return 0, f"{uid}\n{gid}\n{docker_transport._OWNER_END}\n".encode(), b""


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
    t = _transport([(0, b"", b"")] * docker_transport._OWNER_TRIES)
    with pytest.raises(KernelStartError) as info:
        container_owner(t, "short-name")
    message = str(info.value)
    assert "exit code 0" in message and "stdout b''" in message
    assert f"{docker_transport._OWNER_TRIES} tries" in message
    assert len(t.asked) == docker_transport._OWNER_TRIES


def test_a_failing_exec_reports_its_exit_code_and_stderr() -> None:
    t = _transport([(126, b"", b"OCI runtime exec failed")] * docker_transport._OWNER_TRIES)
    with pytest.raises(KernelStartError, match=r"exit code 126.*OCI runtime exec failed"):
        container_owner(t, "short-name")
