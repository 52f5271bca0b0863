"""Found by the breaker helper on other interpreters (2026-12-06): two helpers that run in a
container before any kernel of the process says which interpreter is there ran ``python3``. In an
image whose Python is only a kernel's ``python=`` (``/opt/py/bin/python3``):

* ``--hermes-reuse`` never reused a parked container: the claim's clearing exec failed, the log
  said "a reused container ... still runs kernel processes (b''): not used", and a new container
  was started every run;
* a crashed xdist worker's kernels in the run's container were not reaped (the scan's exec failed,
  the container was skipped): they ran on until their orphan timer.

Both now run with ``python3``, else the interpreter a kernel runner there was started with (its
command line), else, with no Python there and so no kernel, do without
(``transports/script_pythons.py``: ``python_anywhere``).
"""

from __future__ import annotations

import os
import uuid

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions, start_kernel
from pytest_hermes_kernel.containers.lifecycle import remove_container
from pytest_hermes_kernel.containers.reuse import ReusePolicy
from pytest_hermes_kernel.plugin.crashes import reap_in_containers
from pytest_hermes_kernel.transports import make_transport
from tests.regressions.conftest import PYTHON_ELSEWHERE
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_parked_container_is_claimed_again(image_without_python3: str, tmp_path) -> None:
    policy = ReusePolicy(directory=str(tmp_path))
    first = make_transport("docker", server=False, reuse=policy, image=image_without_python3,
                           run_id=f"earlier-{uuid.uuid4().hex[:12]}")
    try:
        start_kernel(first, python=PYTHON_ELSEWHERE).shutdown()
        parked = first.container_id
    finally:
        first.close()  # the run's last user: the container is parked
    now = make_transport("docker", server=False, reuse=policy, image=image_without_python3,
                         run_id=f"now-{uuid.uuid4().hex[:12]}")
    try:
        with start_kernel(now, python=PYTHON_ELSEWHERE) as kernel:
            assert kernel.execute("1 + 1").value == "2"
            assert now.container_id == parked, "the parked container was not reused"
    finally:
        claimed = now.container_id
        now.close()  # parks what it used: removed here, as is one started in its place
        for container in {str(parked), str(claimed)} - {"None"}:
            remove_container(container)


def test_a_dead_workers_kernel_is_reaped_in_its_container(image_without_python3: str) -> None:
    run_id = f"reap-{uuid.uuid4().hex[:12]}"
    transport = make_transport("docker", server=False, image=image_without_python3, run_id=run_id)
    try:
        kernel = KernelHandle(transport, KernelOptions(python=PYTHON_ELSEWHERE)).start()
        try:
            assert kernel.execute("1").ok

            assert reap_in_containers(os.getpid(), run_id) >= 1, "its runner was not found and killed"
            wait_until(lambda: not transport.alive(kernel.launched), 5.0, what="the reaped kernel's runner to be gone")
        finally:
            kernel.shutdown()
    finally:
        transport.close()
