"""A forked child of the host does not keep its parent's local kernels alive.

A local kernel's channel (one end of a socketpair) is its lease: when the host dies, by any
means, the kernel sees EOF and ends within ~0.1 s, and so does the kernel server whose control
socket is the server's lease. A child forked by the host (``os.fork()``, a ``multiprocessing``
worker with the fork start method, a pre-forking server) inherited copies of those sockets, so
no EOF came while it lived: a host SIGKILLed beside such a child left its kernels (the idle one
and the one running a cell, forked by the kernel server or spawned) and its kernel server running
for as long as the child lived, 6 s and more here; a pool worker of a dead parent can wait for
ever. Now the child's copies are closed in the child at the fork (its parent's kernels are not its
own: it cannot use them, ``KernelForkedError``), and the kernels end with the host.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import psutil
import pytest

from tests.support import all_gone, gone, kill_quietly, python_host

HOST = """
import json, multiprocessing, os, sys, threading, time
import psutil
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

def quiet_sleep():  # the child outlives the host; it must not hold the test's pipes either
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(60)
    os._exit(0)

forked = start_kernel("local", timeout=120)         # forked by the local kernel server
spawned = start_kernel(make_transport("local", server=False), timeout=120)  # spawned, no server
forked.execute("x = 1")
spawned.execute("x = 1")
threading.Thread(target=spawned.execute, args=("import time; time.sleep(60)",), daemon=True).start()
server = psutil.Process(forked.runner_pid).ppid()
time.sleep(0.5)  # (the cell is under way: a lease also ends a kernel mid-cell)
if sys.argv[1] == "os.fork":
    child = os.fork()
    if child == 0:
        quiet_sleep()
else:
    proc = multiprocessing.get_context("fork").Process(target=quiet_sleep, daemon=False)
    proc.start()
    child = proc.pid
print(json.dumps({"child": child, "server": server,
                  "kernels": [forked.runner_pid, forked.pid, spawned.runner_pid, spawned.pid]}), flush=True)
time.sleep(0.2)
os.kill(os.getpid(), 9)  # no exit hook: the leases are all that ends the kernels
"""


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads; /proc")
@pytest.mark.parametrize("how", ["os.fork", "multiprocessing"])
def test_the_kernels_end_with_their_host_while_its_forked_child_lives(how: str) -> None:
    host = python_host(HOST.replace("sys.argv[1]", repr(how)))
    out, err = host.communicate(timeout=120)
    assert host.returncode == -signal.SIGKILL, err[-3000:]
    facts = json.loads(out.strip().splitlines()[-1])
    kernels, child, server = facts["kernels"], facts["child"], facts["server"]
    try:
        deadline = time.monotonic() + 10.0
        while not all_gone([*kernels, server]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not gone(child), "the test needs the child alive while it looks"
        left = [pid for pid in [*kernels, server] if not gone(pid)]
        assert left == [], (f"10 s after the host was SIGKILLed, with its {how} child alive, these "
                            f"kernel processes (runner, worker, runner, worker, then the kernel server "
                            f"{server}) still run: {left} of {kernels}")
    finally:
        kill_quietly([pid for pid in [child, *kernels, server] if not gone(pid)])


#: The end of a host script: a forked child that lives on (its stdio on /dev/null), the pids said, the
#: host SIGKILLed (``said``: more to print, a dict's items).
FORK_THEN_DIE = """
kernel.execute("x = 1")
child = os.fork()
if child == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(60)
    os._exit(0)
print(json.dumps({"child": child, "runner": kernel.runner_pid, **said}), flush=True)
time.sleep(0.2)
os.kill(os.getpid(), 9)
"""


SSH_HOST = """
import json, os, sys, time
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

target, key_file, known_hosts = sys.argv[1:4]
transport = make_transport("ssh", target=target, key_filename=key_file, known_hosts=known_hosts)
kernel = start_kernel(transport, timeout=30, orphan_timeout=3)
said = {}
""" + FORK_THEN_DIE


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads")
def test_an_ssh_kernel_ends_by_its_orphan_timer_while_its_hosts_forked_child_lives(docker_ready, tmp_path) -> None:
    """On a host of the user's own (``target=``: nothing removes it when the host dies), a kernel's
    lease is its orphan timer: no client for ``orphan_timeout`` s. The child's copy of the ssh
    connection's socket kept the connection, and so the kernel's client, alive: with
    ``orphan_timeout=3`` the runner still ran 12 s after the host was SIGKILLed (it ended at 3 s
    without the child). Now the child closes its copy at the fork."""
    import subprocess
    import uuid

    import docker

    from pytest_hermes_kernel.containers.images import ensure_image
    from pytest_hermes_kernel.containers.keys import generate_keypair
    from pytest_hermes_kernel.containers.lifecycle import remove_container, start_sshd
    from tests.support import REPO_ROOT, container_output

    client = docker.from_env()
    private, public = generate_keypair()
    sshd = start_sshd(image=ensure_image(client), run_id=f"forklease-{uuid.uuid4().hex[:10]}", worker_id="forklease",
                      authorized_key=public)
    child = None
    try:
        key = tmp_path / "id_ed25519"
        key.write_text(private)
        key.chmod(0o600)
        host_key = " ".join(container_output(client, sshd.container_id,
                                             ["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).split()[:2])
        known = tmp_path / "known_hosts"
        known.write_text(f"[{sshd.host}]:{sshd.port} {host_key}\n")
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        done = subprocess.run([sys.executable, "-c", SSH_HOST, f"{sshd.user}@{sshd.host}:{sshd.port}", str(key), str(known)],
                              capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
        facts = json.loads(done.stdout.strip().splitlines()[-1])
        child = facts["child"]

        def runner_runs() -> bool:
            return client.containers.get(sshd.container_id).exec_run(["kill", "-0", str(facts["runner"])],
                                                                     user="hermes").exit_code == 0

        deadline = time.monotonic() + 10.0  # the orphan timer's 3 s, and slack
        while runner_runs() and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not gone(child), "the test needs the child alive while it looks"
        assert not runner_runs(), ("10 s after the host was SIGKILLed, with its forked child alive, its ssh kernel's "
                                   "runner (orphan_timeout=3) still runs")
    finally:
        if child is not None and not gone(child):
            kill_quietly([child])
        remove_container(sshd.container_id, client=client)
        client.close()


DOCKER_HOST = """
import json, os, sys, time
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.containers.reuse import ReusePolicy
from pytest_hermes_kernel.transports.docker.transport import DockerTransport

transport = DockerTransport(reuse=ReusePolicy(idle_timeout=300, directory=sys.argv[1]))
kernel = start_kernel(transport, timeout=30, orphan_timeout=3)
said = {"container": transport.container_id}
""" + FORK_THEN_DIE


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads")
def test_a_docker_kernel_in_a_kept_container_ends_while_its_hosts_forked_child_lives(docker_ready, tmp_path) -> None:
    """A container kept between runs (``reuse=``) outlives its host, so its kernels end by their orphan
    timer. The child's copy of the docker exec socket kept the kernel server's stream, and so the
    kernel's client, alive: with ``orphan_timeout=3`` its runner still ran 10 s after the host was
    SIGKILLed (it ended at 3 s without the child). Now the child closes its copy at the fork."""
    import subprocess

    import docker

    from pytest_hermes_kernel.containers.lifecycle import remove_container
    from tests.support import REPO_ROOT

    client = docker.from_env()
    facts: dict = {}
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        done = subprocess.run([sys.executable, "-c", DOCKER_HOST, str(tmp_path)], capture_output=True, text=True,
                              timeout=180, env=env)
        assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
        facts = json.loads(done.stdout.strip().splitlines()[-1])

        def runner_runs() -> bool:
            return client.containers.get(facts["container"]).exec_run(["kill", "-0", str(facts["runner"])]).exit_code == 0

        deadline = time.monotonic() + 10.0  # the orphan timer's 3 s, and slack
        while runner_runs() and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not gone(facts["child"]), "the test needs the child alive while it looks"
        assert not runner_runs(), ("10 s after the host was SIGKILLed, with its forked child alive, its docker "
                                   "kernel's runner (orphan_timeout=3) still runs in the kept container")
    finally:
        if facts.get("child") and not gone(facts["child"]):
            kill_quietly([facts["child"]])
        if facts.get("container"):
            remove_container(facts["container"], client=client)
        client.close()
