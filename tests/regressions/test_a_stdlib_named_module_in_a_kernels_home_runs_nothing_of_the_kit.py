"""Seen (breaker review of 52496b9, 2026-12-06): the kit's helper scripts on a kernel's host ran as
``python3 -c SCRIPT``, which puts the working dir first on ``sys.path``, and that dir is the kernel
user's home: on docker the exec's working dir (``/home/hermes``, the image's), on ssh the login's.
52496b9 took a project's own ``types.py`` out of the local helpers' way; these still imported
whatever the home held:

* docker: a cell that wrote ``~/signal.py`` had it run **as root** by the next kill of its runner
  (the kill scripts import ``signal`` and run as root): ``uid=0`` written from the planted module,
  though kernels run as the image's ``hermes`` user, never as root;
* ssh: a login whose home held a ``signal.py`` (anyone's scratch file) had it run by every kill,
  and one that raises made each kill fail: ``transport.kill()`` False and the runner left running, on
  the spawn and server paths alike (seen by hand; the planted module here stands in for the real one
  and writes down that it ran: ``uid=1000``).

Now every helper script runs as ``python3 -I -c`` (no working dir, no user site, no ``PYTHON*``
variables on its path): the planted module never runs, and the kill ends the runner.
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from tests.odd_hosts import odd_ssh_host
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

RECORD = "/tmp/who-ran-the-planted-signal-py"

#: A ``signal.py`` that writes down who ran it, then stands in for the real one (nothing else shows).
PLANTED = f'''import os, sys
with open({RECORD!r}, "a") as fh:
    fh.write(f"uid={{os.getuid()}}\\n")
del sys.modules["signal"]
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
import signal as _real
sys.modules["signal"] = _real
globals().update(vars(_real))
'''


def test_a_module_a_docker_cell_plants_in_its_home_never_runs_as_root() -> None:
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    transport = DockerTransport(server=False, container="fresh", run_id=f"planted-{os.getpid()}-{time.monotonic_ns()}")
    handle = KernelHandle(transport)
    try:
        handle.start()
        cid, pid = handle.launched.extra["container"], handle.launched.pid
        planted = handle.execute(f"import os\nopen(os.path.expanduser('~/signal.py'), 'w').write({PLANTED!r})")
        assert planted.status == "ok", planted.summary()

        assert transport.kill(handle.launched)
        code, record, _ = transport._run(cid, ["cat", RECORD])
        assert transport._run(cid, ["test", "-d", f"/proc/{pid}"])[0] != 0, "the runner is still there"
    finally:
        handle.shutdown()
        transport.close()
    assert code != 0, f"the planted ~/signal.py ran: {record!r}"


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_an_ssh_home_holding_a_signal_py_still_has_its_kernels_killed(tmp_path, server: bool) -> None:
    setup = f"cat > /home/hermes/signal.py <<'EOF'\n{PLANTED}EOF\nchown hermes /home/hermes/signal.py"
    with odd_ssh_host(tmp_path, setup=setup) as host:
        transport = host.transport(server=server)
        handle = KernelHandle(transport)
        try:
            handle.start()
            pid = handle.launched.pid
            killed = transport.kill(handle.launched)
            ran = host.run(f"cat {RECORD} 2>/dev/null || true")
            assert killed, f"kill() said False; the home's signal.py ran: {ran!r}"
            wait_until(lambda: host.run(f"test -d /proc/{pid} || echo gone").strip() == "gone", 10.0, interval=0.1,
                       what=f"the runner (pid {pid}) to end")
        finally:
            handle.shutdown()
            transport.close()
    assert ran == "", f"the home's signal.py ran: {ran!r}"
