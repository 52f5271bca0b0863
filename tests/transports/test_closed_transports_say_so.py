"""A kernel asked of a closed docker or ssh transport is refused with an error that says the
transport was closed and what to do (the ssh one said "is the host up and the key accepted?",
which sends a user looking at a healthy host)."""

from __future__ import annotations

import uuid

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions
from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import make_transport


@pytest.mark.hermes_transports("docker", "ssh")
@pytest.mark.parametrize("used_before", [False, True], ids=["never-used", "used"])
def test_a_kernel_on_a_closed_transport_is_refused_with_what_to_do(hermes_transport: Transport, used_before: bool) -> None:
    transport = make_transport(hermes_transport.name, run_id=f"test-{uuid.uuid4().hex}")
    if used_before:
        with KernelHandle(transport, KernelOptions()) as k:
            assert k.execute("1").value == "1"
    transport.close()

    with pytest.raises(KernelStartError) as refused:
        KernelHandle(transport, KernelOptions()).start()

    message = str(refused.value)
    assert f"this {transport.name} transport was closed" in message, message
    assert "start the kernel on an open transport" in message and "is the host up" not in message, message
