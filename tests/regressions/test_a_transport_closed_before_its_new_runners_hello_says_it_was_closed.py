"""Found by a helper (2026-12-07): an ssh transport closed (``transport.close()`` from another
thread, the plugin's session end) after its launch had answered (the server forked the kernel, or
the spawn's runner said ``ready``) but before the new runner's hello came. The close ended the
connection the runner's channel rode, and the start blamed the runner: ``KernelStartError: the ssh
kernel runner ended during start, before its hello: ...``: a user went looking at a healthy
runner's log. Docker's server path said the same; its spawn path (an exec stream, which outlives
the close) started the kernel on the closed transport. A close during the server's fork says the
transport was closed
(``test_a_start_whose_transport_is_closed_as_its_server_forks_it_says_the_transport_was_closed``);
a close in this later window now says the same, with what to do, and the runner is ended.

The close lands in that window through the transport's own ``launch``: it is wrapped to close the
transport once the real launch has answered, before ``start_kernel`` reads the hello. Another
transport of the same run keeps the kernel host up (and looks whether the runner ended).
"""

from __future__ import annotations

import uuid

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.errors import CLOSED_TRANSPORT_HINT
from pytest_hermes_kernel.kernel.contract import Launched, LaunchSpec
from pytest_hermes_kernel.transports import make_transport
from tests.support import kernels_shut_down_after, wait_until  # noqa: F401 - fixture


@pytest.mark.parametrize("server", [True, False], ids=["kernel-server", "spawn"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_close_between_the_launch_and_the_hello_says_the_transport_was_closed(kernels, name: str, server: bool) -> None:
    run_id = f"test-closed-hello-{uuid.uuid4().hex[:12]}"
    looker_transport = make_transport(name, run_id=run_id, server=False)  # keeps the host up, and looks at it
    transport = make_transport(name, run_id=run_id, server=server)
    launch, launched = transport.launch, []

    def launch_then_close(spec: LaunchSpec) -> Launched:
        launched.append(launch(spec))
        transport.close()  # as another thread's close would, in this window
        return launched[-1]

    try:
        looker = start_kernel(looker_transport)
        kernels.append(looker)
        transport.launch = launch_then_close  # type: ignore[method-assign]
        with pytest.raises(KernelStartError) as refused:
            kernels.append(start_kernel(transport))
        pid = launched[0].pid
        wait_until(lambda: looker.execute(f"import os; os.path.exists('/proc/{pid}')").value == "False", 15.0,
                   what=f"the closed transport's new runner (pid {pid}) to end")
    finally:
        transport.close()
        looker_transport.close()

    message = str(refused.value)
    assert f"this {name} transport was closed during the kernel's start" in message, message
    assert message.endswith(CLOSED_TRANSPORT_HINT), message
    assert "before its hello" not in message, message
