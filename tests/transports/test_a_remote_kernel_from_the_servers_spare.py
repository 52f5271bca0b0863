"""A container's or ssh host's kernel server keeps a spare kernel too (kernel/runner/spare.py,
server_remote.py): after a spawn it forks a supervisor that builds itself and forks its worker,
both waiting for the next kernel's config and listening socket. A kernel taken from it must be
exactly what a kernel forked at the request is (issue #11: "an optimisation, never a semantic
change"): its own id in both processes' environ, its cwd, environment, output cap and random
state, a restart's worker the same; the spare is the server's (the leak probes count it with the
server) and ends with it.

The far side is looked at through a kernel of another transport on the same kernel host (the
same run id: the same container), which reads ``/proc`` as any process there can.
"""

from __future__ import annotations

import ast
import concurrent.futures
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from pytest_hermes_kernel.kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from pytest_hermes_kernel.transports import make_transport
from tests.support import kernels_shut_down_after, stays_true, transport_of_its_own, wait_until  # noqa: F401 - fixture

pytestmark = pytest.mark.parametrize("name", ["docker", "ssh"])

#: A cell: ``{pid: (ppid, kernel id or None)}`` of every live process the kernel's user can read.
PROCESSES = r"""
import os as _os
def _hk_processes():
    out = {}
    for n in _os.listdir('/proc'):
        if not n.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % n, 'rb') as fh:
                stat = fh.read()
            with open('/proc/%s/environ' % n, 'rb') as fh:
                env = fh.read().split(b'\0')
        except OSError:
            continue
        fields = stat[stat.rfind(b')') + 2:].split()
        if fields[0] != b'Z':
            kid = [e[17:].decode() for e in env if e.startswith(b'HERMES_KERNEL_ID=')]
            out[int(n)] = (int(fields[1]), kid[0] if kid else None)
    return out
"""
CWD_ENV_ID = "import os; (os.getcwd(), os.environ.get('HK_SPARE_X'), os.environ['HERMES_KERNEL_ID'])"


@pytest.fixture
def run_id() -> str:
    return f"test-spare-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def transports(name: str, run_id: str) -> Any:
    """``(make, made)``: ``make()`` gives a server-path transport of the test's run (closed after)."""
    made: list[Any] = []

    def make() -> Any:
        made.append(make_transport(name, run_id=run_id, server=True))
        return made[-1]

    yield make
    for transport in reversed(made):
        transport.close()


def processes(looker: KernelHandle) -> dict[int, tuple[int, str | None]]:
    looker.execute(PROCESSES)
    return ast.literal_eval(looker.execute("_hk_processes()").value)  # type: ignore[no-any-return]


def spare_of(looker: KernelHandle, server: int, kernels: list[int]) -> tuple[int, int]:
    """``(supervisor, worker)`` of server ``server``'s spare, once it made one."""

    def found() -> tuple[int, int] | None:
        procs = processes(looker)
        for pid, (ppid, kid) in procs.items():
            if ppid == server and pid not in kernels:
                workers = [w for w, (parent, _) in procs.items() if parent == pid]
                if workers:
                    return pid, workers[0]
        return None

    return wait_until(found, 15.0, what=f"the kernel server {server}'s spare (a supervisor and its worker)")


@contextmanager
def a_start_held_in_its_claim(looker: KernelHandle, transport: Any, first: KernelHandle,
                              kernel_dirs: str) -> Iterator[tuple[concurrent.futures.Future, tuple[int, int]]]:
    """A start on ``transport`` held inside its server's claim of the spare: the spare is stopped
    (SIGSTOP, from ``looker``, a kernel of another transport on the same host: the server relays
    nothing while it claims), so the server, having made the new kernel's dir, waits for its answer
    (5 s at most). Yields ``(the start's future, (spare supervisor, spare worker))`` once the dir is
    there.

    :param first: a kernel ``transport``'s server forked (the spare is its server's other child).
    :param kernel_dirs: a cell listing the kernel root's entries, for ``looker``.
    """
    server = processes(looker)[first.runner_pid][0]
    spare = spare_of(looker, server, [first.runner_pid])
    dirs = set(ast.literal_eval(looker.execute(kernel_dirs).value))
    looker.execute(f"import os; os.kill({spare[0]}, {int(signal.SIGSTOP)})")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        starting = pool.submit(start_kernel, transport)
        wait_until(lambda: set(ast.literal_eval(looker.execute(kernel_dirs).value)) - dirs, 15.0,
                   what="the server to make the new kernel's dir (then it claims the stopped spare)")
        yield starting, spare


def test_a_remote_kernel_taken_from_the_spare_is_a_kernel_of_its_own(name, transports, kernels):
    transport = transports()
    first = start_kernel(transport)
    kernels.append(first)
    server = processes(first)[first.runner_pid][0]
    runner, worker = spare_of(first, server, [first.runner_pid])
    procs = processes(first)
    assert procs[runner][1].startswith(SERVER_KERNEL_ID_PREFIX), "the spare carries the server's id, not a kernel's"
    assert procs[worker][1].startswith(SERVER_KERNEL_ID_PREFIX)

    k = start_kernel(transport, cwd="/tmp", env={"HK_SPARE_X": "yes"}, max_output_bytes=2048)
    kernels.append(k)

    assert (k.runner_pid, k.pid) == (runner, worker), "the kernel is the spare"
    assert k.execute("1").kernel.note == ""
    assert k.execute(CWD_ENV_ID).value == repr(("/tmp", "yes", k.kernel_id))
    assert {int(line.split(":")[0]) for line in transport.kernel_processes(k.kernel_id)} == {runner, worker}
    big = k.execute("print('x' * 10000)")
    assert big.stdout_truncated and len(big.stdout) < 4000, "its own output cap, not the spare's default"
    draws = {h.execute("import random; random.random()").value for h in (first, k)}
    assert len(draws) == 2, "its own random state"

    k.restart()  # a restart's worker is forked from the claimed supervisor: the kernel's, not the spare's
    assert k.pid != worker
    assert k.execute(CWD_ENV_ID).value == repr(("/tmp", "yes", k.kernel_id))
    assert {int(line.split(":")[0]) for line in transport.kernel_processes(k.kernel_id)} == {runner, k.pid}

    default = start_kernel(transport)  # the next spare, no cwd given: its kernel dir, as a fork's
    kernels.append(default)
    assert default.execute(CWD_ENV_ID).value == repr((default.launched.kernel_dir, None, default.kernel_id))


def test_a_remote_spare_ends_with_its_server(name, transports, kernels):
    looker = start_kernel(transports())  # another transport's kernel on the same kernel host
    kernels.append(looker)
    transport = transports()
    k = start_kernel(transport)
    k.execute("1")
    server = processes(looker)[k.runner_pid][0]
    runner, worker = spare_of(looker, server, [k.runner_pid])
    k.shutdown()

    transport.close()  # the server's stream ends: the server exits, and its spare with it

    wait_until(lambda: not {server, runner, worker} & set(processes(looker)), 15.0,
               what="the closed transport's kernel server and its spare to end")


def test_a_server_under_a_memory_limit_keeps_no_spare(name, kernels):
    """A spare's pages would count against the kernels' limit (``mem_limit_bytes``): an OOM kill
    under ``hermes_oom`` would come sooner than on the spawn path."""
    with transport_of_its_own(name, server=True, mem_limit_bytes=256 * 2**20) as transport:
        first = start_kernel(transport)
        kernels.append(first)
        second = start_kernel(transport)
        kernels.append(second)
        runners = {first.runner_pid, second.runner_pid}
        server = processes(first)[first.runner_pid][0]
        assert processes(first)[second.runner_pid][0] == server, "both forked by one server"

        assert stays_true(lambda: {p for p, (ppid, _) in processes(first).items() if ppid == server} == runners, 1.0), \
            "the server forked a spare"
