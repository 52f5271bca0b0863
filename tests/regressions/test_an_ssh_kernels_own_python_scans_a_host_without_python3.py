"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): on an ssh host whose ``python3`` is not on the
non-login PATH (``/opt/py/bin``, put on PATH by ``~/.profile`` only), a kernel started with its own
interpreter (``start_kernel(transport, python="/opt/py/bin/python3")``, as the error about the
missing ``python3`` advises; ``hermes_kernel(python=...)`` under pytest) ran, but the transport's
leak snapshot on the spawn path failed: "the kernel scan on ... failed (exit status 127); output:
b''" (the scan ran with the transport's ``python3``), in every snapshot: nothing of the host could
be checked.

Now a scan whose interpreter is missing runs with an interpreter a kernel of the transport was
started with: the kernel's processes are listed while it runs, and none after its shutdown.
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import start_kernel
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

OFF_PATH = ("mkdir -p /opt/py/bin && mv /usr/bin/python3.11 /opt/py/bin/ && rm /usr/bin/python3 && "
            "ln -s python3.11 /opt/py/bin/python3 && echo 'export PATH=/opt/py/bin:$PATH' >> /home/hermes/.profile")


def test_the_leak_scan_finds_a_kernel_on_its_own_python(tmp_path):
    with odd_ssh_host(tmp_path, setup=OFF_PATH) as host:
        transport = host.transport(server=False)
        try:
            kernel = start_kernel(transport, python="/opt/py/bin/python3")
            try:
                assert kernel.execute("import sys; sys.executable").value == "'/opt/py/bin/python3'"
                running = transport.leak_snapshot(os.getpid())["remote kernel process"]
            finally:
                kernel.shutdown()
            after = transport.leak_snapshot(os.getpid())["remote kernel process"]
        finally:
            transport.close()
    assert [d for d in running.values() if kernel.kernel_id in d], running
    assert not [d for d in after.values() if kernel.kernel_id in d], after
