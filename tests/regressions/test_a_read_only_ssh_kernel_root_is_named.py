"""Seen: the kernel root ``~/.hermes-kernels`` on the ssh host had become read-only (a remount, a
chmod, a full disk gives its own "Failure"). A new kernel failed with "ssh transport: could not
prepare the kernel dir over sftp: [Errno 13] Permission denied" and the hint "is the host up and
the key accepted?": the host was up and the key accepted; neither the dir nor the host was named.

Now the error names the dir and the host, and the hint is about what can be written there. Both
start paths (the server path falls back to the spawn path's SFTP).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.support import container_output

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_kernel_root_that_cannot_be_written_is_named_in_the_start_error(own_sshd, start):
    k = start(own_sshd)
    assert k.execute("1").status == "ok"
    root = k.launched.kernel_dir.rsplit("/", 1)[0]
    client, cid = own_sshd.sshd.docker, own_sshd.sshd_container_id
    container_output(client, cid, ["chmod", "0500", root])
    try:
        with pytest.raises(KernelStartError) as caught:
            start_kernel(own_sshd)
    finally:
        container_output(client, cid, ["chmod", "0700", root])

    message = str(caught.value)
    assert root in message and str(own_sshd.current_connection.target) in message, message
    assert "Permission denied" in message, message
    assert "key accepted" not in message, message
    assert "able to write" in message, message
