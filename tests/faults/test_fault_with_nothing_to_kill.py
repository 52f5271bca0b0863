"""Found by a fresh-install helper (2026-12-04): a ``kernel_sigkill`` fault due after a cell that
had ended the worker itself (``sys.exit``) raised a bare ``ProcessLookupError`` on local and "no
process N in container ..." on docker. There is nothing to kill, and a test that passed there
would not have seen its fault: it is a ``ConfigError`` that says so and what to do, on every leg.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import ConfigError


@pytest.mark.hermes_kernel_sigkill(after_cell=1)
def test_kernel_sigkill_after_the_worker_exited_says_there_was_nothing_to_kill(hermes_kernel) -> None:
    r = hermes_kernel.execute("import sys; sys.exit(3)")
    assert (r.status, r.kernel.exit_code) == ("exited", 3), r
    with pytest.raises(ConfigError, match=r"had already ended when the fault was due .*nothing to kill"):
        hermes_kernel.execute("1")
