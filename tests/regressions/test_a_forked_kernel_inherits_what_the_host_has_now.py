"""Seen: a local kernel forked by the kernel server had the umask, rlimits, ignored signals and
signal mask the host process had when that server started, not those it had at the kernel's
start, as a spawned runner (``server=False``) has them. A test that set ``os.umask(0o077)``
(or ``setrlimit``, ``signal.signal(..., SIG_IGN)``) after an earlier test's kernel started the
server got a kernel with umask 0o022 and the old limits on the default path only.

Now a local server is one per such state too: a kernel started after the host changed one is
forked by a server started with it (or spawned), on both paths alike.
"""

from __future__ import annotations

import json
import os
import resource
import signal

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.local import LocalTransport

CELL = """
import json, os, resource, signal
print(json.dumps({"umask": os.umask(0o022), "core": resource.getrlimit(resource.RLIMIT_CORE)[0],
                  "usr2": signal.getsignal(signal.SIGUSR2) == signal.SIG_IGN,
                  "blocked": signal.SIGUSR1 in signal.pthread_sigmask(signal.SIG_BLOCK, [])}))
"""


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_kernel_has_the_umask_limits_and_signals_the_host_has_at_its_start(server):
    transport = LocalTransport(server=server)
    core = resource.getrlimit(resource.RLIMIT_CORE)
    old_umask = os.umask(0o022)
    try:
        with start_kernel(transport) as first:  # the server (if any) starts now, with umask 0o022
            assert json.loads(first.execute(CELL).stdout) == {"umask": 0o022, "core": core[0], "usr2": False,
                                                              "blocked": False}
            new_core = 0 if core[0] != 0 else min(4096, core[1]) if core[1] != resource.RLIM_INFINITY else 4096
            os.umask(0o077)
            resource.setrlimit(resource.RLIMIT_CORE, (new_core, core[1]))
            old_usr2 = signal.signal(signal.SIGUSR2, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
            try:
                with start_kernel(transport) as second:
                    seen = json.loads(second.execute(CELL).stdout)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
                signal.signal(signal.SIGUSR2, old_usr2)
                resource.setrlimit(resource.RLIMIT_CORE, core)
        assert seen == {"umask": 0o077, "core": new_core, "usr2": True, "blocked": True}
    finally:
        os.umask(old_umask)
        transport.close()
