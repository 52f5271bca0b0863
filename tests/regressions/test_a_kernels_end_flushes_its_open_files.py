"""A kernel that ended by ``shutdown()`` or ``sys.exit()`` lost what its cells' open files buffered.

A Python program that ends (``sys.exit``, or at its end) runs its atexit handlers and then frees
its objects: an open file's buffered writes reach the file. The worker left by ``os._exit``
instead: after ``f = open(path, "w"); f.write("hello")`` and no ``close()``, the file stayed
empty after ``sys.exit(0)`` (``exited``, ``exit_code=0``) and after ``shutdown()``
(``ExitInfo(step="request", exit_code=0)``, a clean end by every account), and on ``shutdown()``
no atexit handler ran at all. The worker now ends as an interpreter does: atexit handlers, then
the namespace freed, then ``os._exit``.
"""

from __future__ import annotations

import uuid

import pytest

WRITE = "f = open({path!r}, 'w'); f.write('hello')"
AT_EXIT = "import atexit; atexit.register(lambda: open({path!r}, 'w').write('atexit ran'))"
READ = "import os; p = {path!r}; text = open(p).read() if os.path.exists(p) else None; os.path.exists(p) and os.remove(p); text"


def kernel_host_path() -> str:
    """A path on the kernel host (the test reads it back through a second kernel there: on docker
    and ssh it is not this machine's)."""
    return f"/tmp/hk-end-{uuid.uuid4().hex}"


@pytest.mark.parametrize("end", ["shutdown", "sys.exit"])
def test_the_kernels_end_writes_what_its_open_files_hold(hermes_kernel_factory, end):
    kernel, path = hermes_kernel_factory(), kernel_host_path()
    kernel.execute(WRITE.format(path=path))

    if end == "shutdown":
        info = kernel.shutdown()
        assert (info.step, info.exit_code) == ("request", 0), info
    else:
        result = kernel.execute("import sys; sys.exit(0)")
        assert (result.status, result.kernel.exit_code) == ("exited", 0), result.summary()

    assert hermes_kernel_factory().execute(READ.format(path=path)).value == "'hello'"


def test_a_shutdown_runs_the_kernels_atexit_handlers(hermes_kernel_factory):
    kernel, path = hermes_kernel_factory(), kernel_host_path()
    kernel.execute(AT_EXIT.format(path=path))

    info = kernel.shutdown()

    assert (info.step, info.exit_code) == ("request", 0), info
    assert hermes_kernel_factory().execute(READ.format(path=path)).value == "'atexit ran'"


def test_a_shutdown_with_an_idle_process_pool_ends_by_request(hermes_kernel_factory):
    """Its atexit join of the pool's workers waited for the grace: ``concurrent.futures`` shuts its
    executors down from ``threading``'s exit calls, which an exit request now runs too."""
    kernel = hermes_kernel_factory()
    kernel.execute("import concurrent.futures as cf, multiprocessing as mp\n"
                   "pool = cf.ProcessPoolExecutor(2, mp_context=mp.get_context('fork'))\n"
                   "assert pool.submit(abs, -1).result() == 1")

    info = kernel.shutdown()

    assert (info.step, info.exit_code) == ("request", 0), info
