"""Seen (breaker review of eb6632a, 2026-12-06): the SFTP removal that takes over when ``rm -rf`` of
an ssh kernel dir fails (``sftp_rmtree``, "never following a symlink") followed the one symlink it
was given: a kernel whose cell had swapped its own dir for a symlink to ``~/precious`` (and left
``~/.hermes-kernels`` read-only, so ``rm`` could not unlink it) had everything in ``~/precious``
removed by its shutdown: 2 files and a dir the kit never made, outside ``~/.hermes-kernels``.

Now a kernel dir that is no directory (a symlink, a file) is unlinked by SFTP, never listed through:
``~/precious`` keeps what it held, and the dir that could not be removed is warned of, as before.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

PRECIOUS = "/home/hermes/precious"
SETUP = f"mkdir -p {PRECIOUS}/sub && echo a > {PRECIOUS}/a && echo b > {PRECIOUS}/sub/b && chown -R hermes {PRECIOUS}"

SWAP = f"""
import os
kdir = os.getcwd()
os.chdir('/')
os.rename(kdir, kdir + '-moved')
os.symlink({PRECIOUS!r}, kdir)
os.chmod(os.path.dirname(kdir), 0o500)
"""


def test_a_kernel_dir_swapped_for_a_symlink_leaves_its_target_alone(tmp_path):
    with odd_ssh_host(tmp_path, setup=SETUP) as host:
        transport = host.transport(server=False)
        handle = KernelHandle(transport)
        try:
            handle.start()
            kdir = handle.launched.kernel_dir
            assert handle.execute(SWAP).status == "ok"
            assert host.run(f"readlink {kdir}").strip() == PRECIOUS
        finally:
            handle.shutdown()
            transport.close()
        left = host.run(f"cd {PRECIOUS} && find . | sort")
    assert left.split() == [".", "./a", "./sub", "./sub/b"], f"{PRECIOUS} after the kernel's shutdown:\n{left}"
