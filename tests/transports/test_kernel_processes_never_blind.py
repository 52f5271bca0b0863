"""``Transport.kernel_processes`` never answers "nothing left" when it could not look.

The contract suite, the host-death checks and ``hermes-kernel ls`` read an empty list as
"nothing of the kernel is left". The ssh transport returned ``[]`` when the host could not be
reached, the docker transport when the engine failed, and filecell when its backend did: a
check on an unreachable host passed. Each now raises ``TransportLostError``; a container that is
really gone still has no processes.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport
from pytest_hermes_kernel.transports.ssh.transport import SshTransport


class _BrokenBackend:
    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        raise ConnectionResetError("the sandbox went away")


def test_ssh_kernel_processes_on_an_unreachable_host_raise() -> None:
    transport = SshTransport(target="nobody@127.0.0.1:1", connect_timeout=2.0)  # nothing listens on port 1
    try:
        with pytest.raises(TransportLostError, match="127.0.0.1"):
            transport.kernel_processes("0" * 32)
    finally:
        transport.close()


def test_filecell_kernel_processes_through_a_failing_backend_raise() -> None:
    transport = FileCellTransport(_BrokenBackend())
    with pytest.raises(TransportLostError, match="the sandbox went away"):
        transport.kernel_processes("0" * 32)


def test_docker_kernel_processes_raise_when_the_engine_fails_and_not_when_the_container_is_gone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_hermes_kernel.containers.images import docker_status
    from pytest_hermes_kernel.transports import get_transport
    from pytest_hermes_kernel.transports.docker import probes as docker_probes

    ok, why = docker_status()
    if not ok:
        pytest.skip(f"docker engine not reachable: {why}")
    transport = get_transport("docker")
    locator = {"container_id": transport.shared_container()}

    def engine_down(*args: object, **kwargs: object) -> None:
        raise ConnectionError("the engine stopped answering")

    monkeypatch.setattr(transport, "run_script", engine_down)  # the scan's exec fails
    # no kernel server to ask instead (one may run there from an earlier test): the scan is an exec
    monkeypatch.setattr(docker_probes, "probe_by_server", lambda *args, **kwargs: None)
    with monkeypatch.context() as patch:
        # running at first; then the engine cannot be asked at all
        patch.setattr(transport.hosts, "running", _answers(True, ConnectionError("the engine stopped answering")))
        with pytest.raises(TransportLostError, match="the engine stopped answering"):
            transport.kernel_processes("0" * 32, locator)
    with monkeypatch.context() as patch:
        patch.setattr(transport.hosts, "running", _answers(True, False))  # removed while the scan started
        assert transport.kernel_processes("0" * 32, locator) == []


def _answers(*answers: object):
    """``running(cid)`` that gives ``answers`` in turn (an exception is raised)."""
    queue = list(answers)

    def running(container_id: str) -> bool:
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return bool(answer)

    return running


@pytest.mark.parametrize("lost", [b"", b"1234\tpython3 -B /tmp/hermes-kern"], ids=["blank", "cut"])
def test_docker_scans_whose_output_the_engine_lost_are_asked_again_or_raise(
        monkeypatch: pytest.MonkeyPatch, lost: bytes) -> None:
    """A loaded engine can answer an exec with exit code 0 and its output lost or cut
    (moby/moby#27289): read as is, a live kernel's scan says "no process", and the leak check
    or a host-death check passes blind. A lost answer is asked again; one never complete raises."""
    from pytest_hermes_kernel.containers.images import docker_status
    from pytest_hermes_kernel.kernel.handle import KernelHandle
    from pytest_hermes_kernel.kernel.options import KernelOptions
    from pytest_hermes_kernel.transports import get_transport
    from pytest_hermes_kernel.transports.docker import probes as docker_probes

    ok, why = docker_status()
    if not ok:
        pytest.skip(f"docker engine not reachable: {why}")
    transport = get_transport("docker")
    with KernelHandle(transport, KernelOptions()) as handle:
        locator = {"container_id": handle.launched.extra["container"]}
        monkeypatch.setattr(docker_probes, "probe_by_server", lambda *args, **kwargs: None)  # scans by exec
        real, losses = transport.run_script, []

        def engine_losing(times: int):  # the first ``times`` answers come back lost
            def run_script(*args: object, **kwargs: object) -> tuple[int | None, bytes]:
                if len(losses) < times:
                    losses.append(args)
                    return 0, lost
                return real(*args, **kwargs)
            return run_script

        monkeypatch.setattr(transport, "run_script", engine_losing(1))
        assert transport.kernel_processes(handle.kernel_id, locator), "a live kernel's processes are found"
        assert len(losses) == 1
        losses.clear()
        monkeypatch.setattr(transport, "run_script", engine_losing(100))
        with pytest.raises(TransportLostError, match="no complete answer"):
            transport.kernel_processes(handle.kernel_id, locator)
