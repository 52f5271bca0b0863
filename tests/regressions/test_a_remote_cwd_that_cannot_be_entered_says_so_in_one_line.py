"""Seen: ``start_kernel(get_transport("ssh"), cwd="/nonexistent/dir")`` (docker too: a kernel forked
by a kernel server) failed with "the ssh kernel runner ended during start, before its hello" and
the runner's Python traceback from ``enter_kernel`` as the log's tail; the local transport says
"the working directory cwd=... does not exist".

Now the forked kernel writes one line naming the directory and why, and the start error shows it
instead of a traceback. The spawn path (``server=False``, or the fallback) said it in the shell's
or docker's words with a hint that blamed the interpreter ("'python3' ran but the runner did not
start", "is 'python3' the container's python?"): now in the same words.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import get_transport, make_transport


@pytest.mark.parametrize("path", ["forked", "spawned"])
@pytest.mark.parametrize("transport", ["ssh", "docker"])
@pytest.mark.parametrize("cwd, why", [("/nonexistent/dir", "No such file or directory"),
                                      ("/etc/hostname", "Not a directory")])
def test_a_remote_kernels_cwd_that_cannot_be_entered_is_named_without_a_traceback(docker_ready, transport, path,
                                                                                   cwd, why):
    made = None if path == "forked" else make_transport(transport, server=False)  # the shared one forks
    try:
        with pytest.raises(KernelStartError) as exc:
            start_kernel(made or get_transport(transport), cwd=cwd)
    finally:
        if made is not None:
            made.close()

    text = str(exc.value)
    assert f"cannot enter the working directory cwd={cwd!r}" in text and text.endswith(f": {why}"), text
    assert "Traceback" not in text and "python" not in text, text


@pytest.mark.parametrize("cwd, why", [("/nonexistent/dir", "No such file or directory"),
                                      ("/etc/hostname", "Not a directory")])
def test_a_filecell_kernels_cwd_that_cannot_be_entered_fails_its_start_naming_it(cwd, why):
    """Seen: ``start_kernel("filecell", cwd="tmp")`` started, and every cell then ``died`` with
    ``exit_code=70`` naming nothing (each worker failed to enter the directory at its start)."""
    transport = make_transport("filecell")
    try:
        with pytest.raises(KernelStartError) as exc:
            start_kernel(transport, cwd=cwd)
    finally:
        transport.close()

    text = str(exc.value)
    assert f"cannot enter the working directory cwd={cwd!r}" in text and text.endswith(f": {why}"), text
    assert "Traceback" not in text and "Hint" not in text, text
