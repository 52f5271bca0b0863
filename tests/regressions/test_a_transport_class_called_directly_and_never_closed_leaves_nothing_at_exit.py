"""A docker or ssh transport built by calling its class, that its script never closed, is closed at
the script's exit.

README's "Several docker engines" names one in code as ``DockerTransport(docker_host=URL)``, and
"Outside pytest" says a script that exits normally leaves no container behind; a script that
started a kernel on ``DockerTransport()`` and ended without ``close()`` left its kernel host
container running and its run files behind until a later run's start-up sweep (seen by a
fresh-install helper, 2026-12-06: ``docker ps`` listed it after the script's exit). Only
``make_transport``'s were closed at exit; now every transport that started a kernel is, unless it
was closed.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support import python_host, run_leftovers

pytestmark = pytest.mark.usefixtures("docker_ready")

SCRIPT = """
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import {cls}
transport = {cls}(run_id={run_id!r})
kernel = start_kernel(transport)
print(kernel.execute("6 * 7").value)
"""


@pytest.mark.parametrize("cls", ["DockerTransport", "SshTransport"])
def test_an_unclosed_transport_class_leaves_no_container_or_key(cls: str) -> None:
    run_id = f"unclosed-class-{uuid.uuid4().hex[:12]}"
    script = python_host(SCRIPT.format(cls=cls, run_id=run_id))
    out, err = script.communicate(timeout=180)
    assert script.returncode == 0 and out.strip() == "42", (script.returncode, out, err[-2000:])

    assert run_leftovers(run_id) == [], f"the {cls}'s script left them at its exit"
