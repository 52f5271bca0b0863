"""Found by the breaker helper on hostile host environments (2026-12-05): an ordinary user whose
umask takes the owner's write bit (``umask 0277``, or ``0222``) could start no local kernel: every
test of the ``local`` leg errored with "cannot write the kernel dir /tmp/hermes-kernel-...:
Permission denied. Hint: point PYTEST_HERMES_KERNEL_DIR at a writable directory", though the
kernel dir root was writable: ``mkdtemp`` made the kit's own dir 0700 less the umask, 0500. The
kit's private dirs (a kernel dir, a kernel server's dir, a download's staging dir) are now 0700
whatever the umask: kernels start, on the kernel-server and the spawn path, and a download lands.
"""

from __future__ import annotations

import os

from tests.nonroot import unprivileged_user

CODE = """
import os, shutil, tempfile
home = tempfile.mkdtemp()  # 0700 now, before the umask
os.umask(0o277)
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

for server in (True, False):
    t = make_transport("local", server=server)
    try:
        with start_kernel(t, start_timeout=60) as k:
            k.execute("import os; os.umask(0o077); os.makedirs('tree/sub'); open('tree/sub/out.txt', 'w').write('x')")
            report = k.download("tree", os.path.join(home, f"got-{server}"))
            print("RAN", server, k.execute("6 * 7").value, report.files, flush=True)
    except Exception as exc:
        print("FAILED", server, type(exc).__name__, str(exc).splitlines()[0], flush=True)
    finally:
        t.close()
print("LANDED", sorted(os.path.relpath(os.path.join(d, f), home) for d, _, fs in os.walk(home) for f in fs))
os.umask(0o077)
shutil.rmtree(home)
"""


def test_kernels_start_and_a_download_lands_under_umask_0277() -> None:
    user = unprivileged_user()
    ran = user.run(CODE, env={"TMPDIR": ""})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    assert lines == ["RAN True 42 1", "RAN False 42 1", "LANDED ['got-False/sub/out.txt', 'got-True/sub/out.txt']"], (
        ran.stdout + ran.stderr[-2000:])
    assert os.geteuid() == 0 or user.uid == os.geteuid()
