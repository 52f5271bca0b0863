"""The ssh transport over several hosts: ``targets=`` / ``--hermes-ssh-targets`` (issue 12, point 7).

Two sshd containers stand in for two machines a user names: the kit's image, one key pair that
both accept (as a fleet's hosts accept one deploy key), their host keys in a known_hosts file.
Kernels go to the host with the fewest live kernels of the process; each kernel's first result
names its host in ``kernel.note``; a ``-n 2`` run over both leaves nothing on either.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_hermes_kernel import ConfigError, KernelHandle
from pytest_hermes_kernel.containers.keys import generate_keypair
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.ssh.targets import SshTargets, parse_targets
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import container_output

pytestmark = pytest.mark.usefixtures("docker_ready")


@dataclass(frozen=True)
class Hosts:
    targets: tuple[str, str]
    key_file: str
    known_hosts: str
    container_ids: tuple[str, str]


def _host_key(client, container_id: str) -> str:  # noqa: ANN001 - docker-py
    return " ".join(container_output(client, container_id, ["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).split()[:2])


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    """Two sshd containers accepting one key, their host keys in a known_hosts file; removed after."""
    import docker

    from pytest_hermes_kernel.containers.images import ensure_image
    from pytest_hermes_kernel.containers.lifecycle import remove_container, start_sshd

    client = docker.from_env()
    private, public = generate_keypair()
    run_id, started = f"sshtargets-{uuid.uuid4().hex[:10]}", []
    try:
        image = ensure_image(client)
        for _ in range(2):
            started.append(start_sshd(image=image, run_id=run_id, worker_id="targets", authorized_key=public))
        tmp = tmp_path_factory.mktemp("fleet")
        key = tmp / "id_ed25519"
        key.write_text(private)
        key.chmod(0o600)
        host_keys = [_host_key(client, e.container_id) for e in started]
        assert host_keys[0] != host_keys[1], "each container makes its own host key (the image carries none)"
        known = tmp / "known_hosts"
        known.write_text("".join(f"[{e.host}]:{e.port} {key}\n" for e, key in zip(started, host_keys)))
        targets = tuple(f"{e.user}@{e.host}:{e.port}" for e in started)
        yield Hosts(targets, str(key), str(known), tuple(e.container_id for e in started))  # type: ignore[arg-type]
    finally:
        for endpoint in started:
            remove_container(endpoint.container_id, client=client)
        client.close()


def _kernel_pids_on(client, container_id: str) -> list[str]:  # noqa: ANN001 - docker-py
    script = ("import os\nfor p in os.listdir('/proc'):\n if p.isdigit():\n  try: e=open(f'/proc/{p}/environ','rb').read()\n"
              "  except OSError: continue\n  if b'HERMES_KERNEL_ID=' in e: print(p)")
    return container_output(client, container_id, ["python3", "-c", script], user="hermes").split()


def test_kernels_go_to_the_host_with_the_fewest_live_kernels(two_hosts):
    transport = make_transport("ssh", targets=list(two_hosts.targets), key_filename=two_hosts.key_file,
                               known_hosts=two_hosts.known_hosts)
    kernels: list[KernelHandle] = []
    try:
        assert isinstance(transport, SshTargets) and transport.places == list(two_hosts.targets)
        for _ in range(4):
            kernels.append(KernelHandle(transport).start())
        notes = [k.execute("import socket; x = socket.gethostname()").kernel.note for k in kernels]
        where = [next(t for t in two_hosts.targets if t in n) for n in notes]
        assert sorted(where) == sorted(two_hosts.targets * 2), notes
        assert transport.live_kernels() == {t: 2 for t in two_hosts.targets}
        hostnames = {w: k.execute("x").value for w, k in zip(where, kernels)}
        assert len(set(hostnames.values())) == 2, f"two hosts, two hostnames: {hostnames}"

        kernels.pop(0).shutdown()
        kernels.append(KernelHandle(transport).start())  # the host that lost one gets the next
        assert transport.live_kernels() == {t: 2 for t in two_hosts.targets}
        assert where[0] in kernels[-1].execute("1").kernel.note
    finally:
        for kernel in kernels:
            kernel.shutdown()
        transport.close()
    assert transport.live_kernels() == {t: 0 for t in two_hosts.targets}


def test_one_target_is_a_plain_ssh_transport_and_bad_lists_are_refused(two_hosts):
    single = make_transport("ssh", targets=[two_hosts.targets[0]], key_filename=two_hosts.key_file,
                            known_hosts=two_hosts.known_hosts)
    try:
        assert isinstance(single, SshTransport) and single.sshd is None and str(single.target) == two_hosts.targets[0]
    finally:
        single.close()
    with pytest.raises(ConfigError, match="named twice"):
        parse_targets(f"{two_hosts.targets[0]},{two_hosts.targets[0]}")
    with pytest.raises(ConfigError, match="user@host:port"):
        parse_targets("hermes@127.0.0.1:notaport")
    with pytest.raises(ConfigError, match="not both"):
        make_transport("ssh", target=two_hosts.targets[0], targets=list(two_hosts.targets))


def test_an_xdist_run_over_two_hosts_uses_both_and_leaves_nothing(two_hosts, pytester, tmp_path):
    import docker

    pytester.makepyfile(test_fleet="""
import pytest

@pytest.mark.parametrize("n", range(6))
def test_where(hermes_kernel, n):
    r = hermes_kernel.execute("2 + 2")
    assert r.value == "4"
    with open(f"{TMP}/{hermes_kernel.kernel_id}", "w") as fh:
        fh.write(r.kernel.note)
""".replace("{TMP}", str(tmp_path)))

    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--hermes-transport=ssh", "--hermes-leak-check=error",
        f"--hermes-ssh-targets={','.join(two_hosts.targets)}", f"--hermes-ssh-key={two_hosts.key_file}",
        f"--hermes-ssh-known-hosts={two_hosts.known_hosts}", timeout=300)

    result.assert_outcomes(passed=6)
    notes = [Path(tmp_path, name).read_text() for name in os.listdir(tmp_path)]
    used = {t for t in two_hosts.targets for n in notes if t in n}
    assert used == set(two_hosts.targets), f"both hosts must get kernels: {notes}"
    client = docker.from_env()
    try:
        for cid in two_hosts.container_ids:
            assert _kernel_pids_on(client, cid) == [], f"a kernel process is left on {cid[:12]}"
    finally:
        client.close()


def test_an_oom_test_skips_the_leg_on_target_hosts_with_the_reason(two_hosts, pytester):
    pytester.makepyfile(test_oom="""
import pytest

@pytest.mark.hermes_oom(limit_bytes=64 * 2**20)
def test_big(hermes_kernel):
    hermes_kernel.execute("x = bytearray(2**30)")
""")

    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rs", "--hermes-transport=ssh", f"--hermes-ssh-targets={','.join(two_hosts.targets)}",
        f"--hermes-ssh-key={two_hosts.key_file}", f"--hermes-ssh-known-hosts={two_hosts.known_hosts}", timeout=120)

    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*--hermes-ssh-targets hosts, which cannot honour container=, mem_limit_bytes= *"
                                 "hermes_oom marker*this leg is skipped*"])


def test_a_transport_drop_on_a_target_host_cuts_its_link(two_hosts, pytester):
    """Seen (a non-root breaker helper, 2026-12-05): on ``--hermes-ssh-targets`` hosts the
    ``hermes_transport_drop`` marker's fault proxy was made but never dialled (a target's
    connection ignored ``connect_via``): a lasting blackhole left the cell ``ok`` (1 failed of 1),
    so a test that a kernel survives a silent link passed with no silence at all."""
    pytester.makepyfile(test_drop="""
import pytest

@pytest.mark.hermes_kernel(keepalive_interval=1.0, keepalive_missed=3, orphan_timeout=1.0)
@pytest.mark.hermes_transport_drop("blackhole", during_cell=2, delay=0.5)
def test_silent(hermes_kernel):
    hermes_kernel.execute("x = 1")
    r = hermes_kernel.execute("import time; time.sleep(8); x", timeout=60)
    assert r.status == "died" and r.kernel.reason == "transport_lost", r.summary()
""")

    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--hermes-transport=ssh", f"--hermes-ssh-targets={two_hosts.targets[0]}",
        f"--hermes-ssh-key={two_hosts.key_file}", f"--hermes-ssh-known-hosts={two_hosts.known_hosts}", timeout=120)

    result.assert_outcomes(passed=1)
