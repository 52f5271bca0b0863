"""A cell that patched ``os.getpid``, ``time.perf_counter`` or ``json.dumps`` ended the worker.

The worker runs in the same interpreter as the cells and looked these up on their modules after
each cell: ``os.getpid`` (is this a process the cell forked? then end it), ``time.perf_counter``
(the cell's duration) and ``json.dumps`` (the result frame). A cell that patched one, as
``unittest.mock.patch(...).start()`` does until it is stopped, ended the worker: ``died``, the
namespace lost; with ``os.getpid`` patched silently, exit code 0 and no word why (the worker took
itself for a forked child). The worker now holds its own references, taken at its import.
"""

from __future__ import annotations

import pytest

PATCHES = {
    "os.getpid": "from unittest import mock; mock.patch('os.getpid', return_value=4242).start()",
    "time.perf_counter": "from unittest import mock; mock.patch('time.perf_counter').start()",
    "json.dumps": "from unittest import mock; mock.patch('json.dumps', return_value=b'{}').start()",
}


@pytest.mark.parametrize("name", list(PATCHES))
def test_a_patched_stdlib_function_keeps_the_kernel(hermes_kernel_factory, name):
    kernel = hermes_kernel_factory()
    kernel.execute("kept = 'yes'")

    patched = kernel.execute(PATCHES[name] + "\nprint('patched')")
    after = kernel.execute("kept")

    assert (patched.status, patched.stdout) == ("ok", "patched\n"), patched.summary()
    assert not patched.kernel.state_lost, patched.summary()
    assert (after.status, after.value) == ("ok", "'yes'") and not after.kernel.state_lost, after.summary()
