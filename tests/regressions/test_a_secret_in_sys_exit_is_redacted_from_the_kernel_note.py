"""A secret a cell passed to ``sys.exit`` leaked, unredacted, in the kernel's note.

The cell's ``evalue`` and ``stderr`` were redacted, but the loss's note ("SystemExit(<code>)
ended the kernel with exit code 1") was built from the runner's raw text: the value showed in
``result.kernel.note``, in ``result.summary()``, and again in the next cell's result, which
reports the same loss. Every text a result carries is redacted (DESIGN.md section 4).
"""

from __future__ import annotations

import pytest

SECRET = "hunter2-" + "canary-5e1f0c"


@pytest.mark.hermes_kernel(env={"HK_EXIT_TOKEN": SECRET})
def test_a_secret_exit_code_never_shows_in_the_note(hermes_kernel):
    result = hermes_kernel.execute("import os, sys; sys.exit(os.environ['HK_EXIT_TOKEN'])")
    assert (result.status, result.kernel.reason) == ("exited", "exited"), result.summary()

    after = hermes_kernel.execute("1")

    assert after.kernel.state_lost and after.kernel.reason == "exited", after.summary()
    for shown in (result.kernel.note, result.summary(), repr(result), after.kernel.note, after.summary()):
        assert SECRET not in shown
    assert "SystemExit([REDACTED])" in after.kernel.note
