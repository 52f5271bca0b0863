"""Handed case B47: a recreated sshd container on the same host:port looked like a
man-in-the-middle (or was trusted silently), paramiko's error left the port out, and the local
ssh agent was reachable from remote kernel code.

Policy: the kit's own sshd containers have their host key read with ``docker exec`` and pinned
(accepted automatically only because the kit started them); for any other ``target`` the keys
come from known_hosts files that are read and never written (``auto-add`` keeps what it accepts
in the transport's own per-session keys), a key that changes within the session is refused with
an error naming ``[host]:port``, and the explicit way to trust the new key is
``SshTransport(target=..., host_key="<type> <base64>")``. Agent forwarding is never requested and
``SSH_AUTH_SOCK`` never reaches a kernel.

A "recreated host on the same port" is a loopback proxy whose upstream moves from one fresh sshd
container to another (each has its own host key).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.faults.proxy import TcpFaultProxy

paramiko = pytest.importorskip("paramiko")


def _sshd(transport) -> dict:
    return transport.sshd.join()


def _new_host_key(record: dict) -> dict:
    """Give the sshd container of ``record`` a host key of its own (the image's sshd containers
    share the key made at build time); sshd reads it for every new connection."""
    import docker

    client = docker.from_env()
    try:
        container = client.containers.get(record["container_id"])
        code, out = container.exec_run(["sh", "-c", "rm -f /etc/ssh/ssh_host_ed25519_key* && ssh-keygen -q -t "
                                        "ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key && "
                                        "cat /etc/ssh/ssh_host_ed25519_key.pub"], user="root")
    finally:
        client.close()
    assert code == 0, out
    kind, b64 = out.decode().split()[:2]
    return dict(record, host_key=f"{kind} {b64}")


@pytest.fixture(scope="module")
def two_hosts(docker_ready: None) -> Iterator[tuple[dict, dict]]:
    """Two fresh sshd containers of the kit (different host keys, different client keys)."""
    from pytest_hermes_kernel.transports import SshTransport

    a, b = SshTransport(container="fresh"), SshTransport(container="fresh")
    try:
        first, second = _sshd(a), _new_host_key(_sshd(b))
        assert first["host_key"] != second["host_key"]
        yield first, second
    finally:
        a.close()
        b.close()


def _pkey(record: dict):
    from pytest_hermes_kernel.containers.keys import load_private_key

    return load_private_key(Path(record["key_file"]).read_text())


def _start_refused(record: dict, port: int) -> pytest.ExceptionInfo[KernelStartError]:
    """The error of a kernel start on ``record``'s host through 127.0.0.1:``port`` (a fault proxy)."""
    from pytest_hermes_kernel.transports import SshTransport

    transport = SshTransport(target=f"{record['user']}@127.0.0.1:{port}", pkey=_pkey(record))
    try:
        with pytest.raises(KernelStartError) as info:
            start_kernel(transport, start_timeout=20)
    finally:
        transport.close()
    return info


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own: paramiko reads ``~/.ssh/known_hosts`` there."""
    (tmp_path / ".ssh").mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_a_changed_host_key_is_refused_naming_host_and_port(two_hosts, home: Path) -> None:
    from pytest_hermes_kernel.transports import SshTransport

    first, second = two_hosts
    extra = home / "extra_known_hosts"
    extra.write_text("")
    with TcpFaultProxy((first["host"], first["port"])) as proxy:
        target = f"{first['user']}@127.0.0.1:{proxy.port}"
        transport = SshTransport(target=target, pkey=_pkey(first), host_key_policy="auto-add", known_hosts=str(extra))
        try:
            with start_kernel(transport) as k:
                assert k.execute("1 + 1").value == "2"
            proxy.upstream = (second["host"], second["port"])  # the host is "recreated" on the same port
            transport._connection().close()
            with pytest.raises(KernelStartError) as info:
                start_kernel(transport, start_timeout=20)
        finally:
            transport.close()
        text = str(info.value)
        assert f"the ssh host key of [127.0.0.1]:{proxy.port} changed" in text, text
        assert f"host_key='{second['host_key']}'" in text  # the explicit way to trust it
        assert "key accepted" not in text, text  # the host is up: its key is refused (was "Hint: is the host up ...")

        trusting = SshTransport(target=target, pkey=_pkey(second), host_key=second["host_key"])
        try:
            with start_kernel(trusting) as k:
                assert k.execute("2 + 2").value == "4"
        finally:
            trusting.close()
    assert extra.read_text() == "" and not (home / ".ssh" / "known_hosts").exists()  # nothing written


def test_a_key_in_known_hosts_that_no_longer_matches_names_host_and_port(two_hosts, home: Path) -> None:
    first, second = two_hosts
    with TcpFaultProxy((second["host"], second["port"])) as proxy:
        (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{proxy.port} {first['host_key']}\n")
        info = _start_refused(second, proxy.port)
    assert f"the ssh host key of [127.0.0.1]:{proxy.port} changed" in str(info.value)
    assert "key accepted" not in str(info.value), str(info.value)


def test_an_unknown_host_key_is_refused_by_default(two_hosts, home: Path) -> None:
    """Keys are accepted without asking only for the kit's own sshd containers: a ``target`` host
    whose key no known_hosts holds is refused unless ``host_key_policy`` says otherwise. A default
    of ``auto-add`` (any key trusted on first sight) passed every other case here (checked)."""
    first, _ = two_hosts
    with TcpFaultProxy((first["host"], first["port"])) as proxy:
        info = _start_refused(first, proxy.port)
    assert f"'[127.0.0.1]:{proxy.port}' not found in known_hosts" in str(info.value), str(info.value)
    assert "pin it with host_key=" in str(info.value)  # the explicit way to trust it
    assert not (home / ".ssh" / "known_hosts").exists()  # nothing written


@pytest.mark.parametrize("transport_name", ["ssh", "local"])
def test_the_agent_is_never_forwarded(transport_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      docker_ready: None) -> None:
    import subprocess

    agent = subprocess.run(["ssh-agent", "-s", "-a", str(tmp_path / "agent.sock")], capture_output=True, text=True,
                           check=True).stdout
    agent_pid = int(agent.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
        with start_kernel(transport_name) as k:
            r = k.execute("import os, subprocess\n"
                          "try:\n    code = subprocess.run(['ssh-add', '-l'], capture_output=True).returncode\n"
                          "except FileNotFoundError:\n    code = 2\n"
                          "(os.environ.get('SSH_AUTH_SOCK'), code)")
    finally:
        os.kill(agent_pid, 15)
    assert r.value == "(None, 2)", r  # ssh-add: 2 = no agent to talk to (1 would be an agent with no keys)
