"""Found by the breaker session: a process a cell started in a session of its own *and* with an
environment of its own (``Popen(..., start_new_session=True, env={...})``, as a daemon that cleans
its environment does) outlived its kernel unseen. It carries no kernel marker, and once its kernel's
processes ended it was a child of init, not of the test process: the leak check passed while
``sleep`` ran on for 300 s after the session (in a container or on an ssh host: until the
container went). Kernel servers are child subreapers now: such a process becomes its kernel
server's. Locally it is then a descendant of the test process, reported (and ended) as a ``child
process``; in a container or on an ssh host the host-process scan lists the unmarked children of
this host's kernel servers as ``remote kernel process`` (kernel ``?``). A local server that is
closed first (the test closes its own transport: found by a breaker helper, 2026-12-04) notes its
adopted children as it closes, and the check lists them as ``kernel process`` (kernel ``?``).

The spawn path (``server=False``) has no server to adopt it: there the spawned runner is the
subreaper, and its reply to the shutdown request names what it adopted (``ExitInfo.leftovers``);
the transport lists those while they live, as the kernel's processes (a strict xfail before).
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, kill_quietly, transport_of_its_own, wait_until

START_HELPER = ("import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True, "
                "env={'PATH': '/usr/bin:/bin'}).pid")



@pytest.mark.parametrize("server", [True, False],
                         ids=["server-path", "spawn-path"])
@pytest.mark.parametrize("end", ["shutdown", "restart", "shutdown-and-close"])
def test_a_helper_with_its_own_environment_is_reported(end, server):
    checker = LeakChecker(grace=0.5)
    transport = LocalTransport(server=server)  # its own kernel server (if any), ended with it
    before = checker.before()
    kernel = start_kernel(transport)
    helper = 0
    try:
        helper = int(kernel.execute(START_HELPER).value)
        if end == "restart":
            kernel.restart()
        info = kernel.shutdown()
        if end == "shutdown-and-close":  # the server that adopted it ends: it would be init's, unseen
            transport.close()
        report = checker.after(before)
        found = [desc for items in report.leaks.values() for desc in items.values()]
        assert any(desc.startswith(f"pid {helper}") and desc.endswith(": sleep 300") for desc in found), \
            report.format("it")
        # the spawned runner named it as it ended; a server's kernel leaves it to the server
        assert info.leftovers == (() if server else (f"pid {helper}: sleep 300",)), info
        checker.cleanup(report)
        wait_until(lambda: gone(helper), 5.0, what="the check to end the helper it reported")
    finally:
        kernel.shutdown()
        kill_quietly([helper])
        transport.close()


@pytest.mark.parametrize("server", [True, False], ids=["server-path", "spawn-path"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_remote_helper_with_its_own_environment_is_reported(docker_ready, name, server):
    with transport_of_its_own(name, server=server) as transport:
        kernel = start_kernel(transport)
        try:
            helper = kernel.execute(START_HELPER).value
        finally:
            info = kernel.shutdown()
        assert info.leftovers == (() if server else (f"pid {helper}: sleep 300",)), info

        def helpers() -> list[str]:
            found = transport.leak_snapshot(os.getpid()).get("remote kernel process", {})
            return [identity for identity, desc in found.items() if desc.startswith(f"pid {helper} ")]

        leaked = helpers()
        # whose it is: the kernel's, as its runner said; a server's adopted child: "?"
        assert len(leaked) == 1 and leaked[0].endswith(":?" if server else f":{kernel.kernel_id}"), \
            transport.leak_snapshot(os.getpid())
        transport.leak_cleanup("remote kernel process", leaked[0])
        wait_until(lambda: not helpers(), 10.0, what="the cleanup to end the helper the scan found")
