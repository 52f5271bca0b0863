"""Handed cases B18 (concurrent starts), B21 (testcontainers under xdist), B22 (mapped port
not ready just after start). Timings and counts are tuned to a 2-core machine; the bounds hold.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_hermes_kernel import KernelKey, KernelRegistry
from pytest_hermes_kernel.cli import doctor
from tests.support import run_containers

N_KERNELS = 16
CAP = 8


def _noise(stop: threading.Event) -> None:
    """Keep binding and closing ephemeral loopback ports while kernels start."""
    while not stop.is_set():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        s.close()


@pytest.mark.parametrize("cap", [None, CAP], ids=["no-cap", f"cap-{CAP}"])
def test_b18_concurrent_starts_all_succeed_and_leave_nothing(hermes_transport, cap) -> None:
    n_kernels = N_KERNELS
    stop = threading.Event()
    noise = threading.Thread(target=_noise, args=(stop,), daemon=True)
    noise.start()
    seen: dict[str, dict] = {}
    reg = KernelRegistry(max_kernels=cap or n_kernels, transport_factory=lambda key: hermes_transport,
                         background_reaper=False)
    try:
        def first_cell(i: int) -> str:
            key = KernelKey(owner=f"b18-{i}", transport=hermes_transport.name)
            with reg.lease(key) as handle:
                seen[handle.kernel_id] = hermes_transport.locator(handle.launched)
                return handle.execute("import os; os.getpid()").value

        with ThreadPoolExecutor(max_workers=n_kernels) as pool:
            pids = list(pool.map(first_cell, range(n_kernels)))
        stop.set()
        assert len(set(pids)) == n_kernels, f"{n_kernels} kernels must report {n_kernels} distinct pids"
        alive = [kid for kid, loc in seen.items() if hermes_transport.kernel_processes(kid, loc)]
        registered = {s.kernel_id for s in reg.snapshot()}
        assert len(registered) == (cap or n_kernels)
        assert set(alive) == registered, "exactly the registered kernels live; every evicted one is dead"
    finally:
        stop.set()
        reg.shutdown_all()
    deadline = time.monotonic() + 10
    while (left := [k for k, loc in seen.items() if hermes_transport.kernel_processes(k, loc)]) and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"after shutdown_all, kernels still alive: {left}"


needs_docker = pytest.mark.skipif(not doctor(["docker"])[0].ok, reason="needs a docker engine")

XDIST_TESTS = """
import pytest

@pytest.mark.hermes_kernel(transport="docker")
@pytest.mark.parametrize("i", range(4))
def test_fast(hermes_kernel, i):
    assert hermes_kernel.execute("1 + 1").value == "2"

@pytest.mark.hermes_kernel(transport="docker")
def test_slow(hermes_kernel):
    r = hermes_kernel.execute("import time; time.sleep(6); 'done'", timeout=60)
    assert r.status == "ok" and r.value == "'done'", r.summary()
"""


@needs_docker
@pytest.mark.hermes_transports("local")
def test_b21_xdist_workers_share_a_container_and_leave_none(pytester, hermes_transport) -> None:
    run_id = f"b21-{uuid.uuid4().hex[:12]}"
    pytester.makepyfile(test_b21=XDIST_TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", f"--hermes-run-id={run_id}",
                                           timeout=300)
    result.assert_outcomes(passed=5)
    text = result.stdout.str() + result.stderr.str()
    assert "409" not in text and "Conflict" not in text
    left = run_containers(run_id)
    assert not left, f"containers of the run left behind: {[c['Id'][:12] for c in left]}"


@needs_docker
@pytest.mark.hermes_transports("local")
def test_b22_sshd_port_is_usable_right_after_start(hermes_transport) -> None:
    import paramiko

    from pytest_hermes_kernel.containers.keys import generate_keypair, load_private_key
    from pytest_hermes_kernel.containers.lifecycle import remove_container, start_sshd
    from pytest_hermes_kernel.containers.images import ensure_image

    image = ensure_image(progress=lambda _m: None)
    priv, pub = generate_keypair()
    for i in range(5):
        started = time.monotonic()
        ep = start_sshd(image=image, run_id=f"b22-{uuid.uuid4().hex[:8]}", worker_id="b22", authorized_key=pub,
                        timeout=30.0)
        try:
            assert ep.host == "127.0.0.1" and isinstance(ep.port, int), ep
            client = paramiko.SSHClient()
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # a throwaway container of this test
            client.connect(ep.host, ep.port, username=ep.user, pkey=load_private_key(priv), timeout=10,
                           allow_agent=False, look_for_keys=False)
            _, out, _ = client.exec_command("python3 -c 'print(1)'")
            assert out.read().strip() == b"1"
            client.close()
        finally:
            remove_container(ep.container_id)
        assert time.monotonic() - started <= 30.0, f"iteration {i} exceeded the start timeout"
