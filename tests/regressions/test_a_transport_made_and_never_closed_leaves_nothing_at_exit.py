"""A transport from ``make_transport`` that its script never closed is closed at the script's exit.

``make_transport`` says the caller closes what it makes, and a script that did not (its kernel
still running, or shut down) left the docker transport's kernel host container, and the ssh
transport's sshd container and its key, until a later run's start-up sweep. The shared
transports were already closed at exit; now each transport ``make_transport`` made is too.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support import python_host, run_leftovers

pytestmark = pytest.mark.usefixtures("docker_ready")

SCRIPT = """
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
transport = make_transport({name!r}, run_id={run_id!r})
kernel = start_kernel(transport)
print(kernel.execute("6 * 7").value)
if {shut_down}:
    kernel.shutdown()
"""


@pytest.mark.parametrize("shut_down", [True, False], ids=["kernel-shut-down", "kernel-running"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_an_unclosed_transport_leaves_no_container_or_key(name: str, shut_down: bool) -> None:
    run_id = f"unclosed-{uuid.uuid4().hex[:12]}"
    script = python_host(SCRIPT.format(name=name, run_id=run_id, shut_down=shut_down))
    out, err = script.communicate(timeout=180)
    assert script.returncode == 0 and out.strip() == "42", (script.returncode, out, err[-2000:])

    assert run_leftovers(run_id) == [], f"the {name} transport's script left them at its exit"
