"""Seen: ``start_kernel(get_transport("ssh"), cwd="/nonexistent/dir")`` (docker too: a kernel forked
by a kernel server) failed with "the ssh kernel runner ended during start, before its hello" and
the runner's Python traceback from ``enter_kernel`` as the log's tail; the local transport says
"the working directory cwd=... does not exist".

Now the forked kernel writes one line naming the directory and why, and the start error shows it
instead of a traceback.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import get_transport


@pytest.mark.parametrize("transport", ["ssh", "docker"])
@pytest.mark.parametrize("cwd, why", [("/nonexistent/dir", "No such file or directory"),
                                      ("/etc/hostname", "Not a directory")])
def test_a_forked_kernels_cwd_that_cannot_be_entered_is_named_without_a_traceback(docker_ready, transport, cwd, why):
    with pytest.raises(KernelStartError) as exc:
        start_kernel(get_transport(transport), cwd=cwd)

    assert f"cannot enter the working directory cwd={cwd!r}: {why}" in str(exc.value)
    assert "Traceback" not in str(exc.value)
