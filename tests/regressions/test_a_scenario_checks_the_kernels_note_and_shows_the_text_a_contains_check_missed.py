"""Seen writing handed-2 B49 and "an OOM death reported as nothing" as scenarios (2026-12-07):
what the kit says of the kernel (``kernel.note``: ``the memory cgroup's OOM killer ended 1
process while this cell ran ...`` for an OOM-killed subprocess, ``a stack overflow?`` for a
SIGSEGV) could not be checked by a scenario: ``text_contains`` looks in stdout, stderr and the
error only, and its failure said ``expected text_contains='OOM', got '(see result)'``. A cell's
``expect`` now takes ``note_contains``, and a failing ``*_contains`` shows the text it looked in.
"""

from __future__ import annotations

import pytest

SEGV = '''
[scenario]
name = "segv-note"
source = "handed-2 B49"
transports = ["local"]

[[cell]]
code = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
expect = { status = "died", signal = 11, note_contains = "a stack overflow?" }
'''

MISSED = '''
[scenario]
name = "missed-text"
source = "a check that fails"
transports = ["local"]

[[cell]]
code = "print('hello from the cell')"
expect = { stdout_contains = "goodbye" }
'''


def test_note_contains_is_checked_and_a_missed_text_is_shown(pytester: pytest.Pytester) -> None:
    fixtures = pytester.mkdir("fixtures")
    (fixtures / "segv.toml").write_text(SEGV)
    (fixtures / "missed.toml").write_text(MISSED)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "fixtures", "--hermes-transport=local",
                                           timeout=120)

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*missed.toml::missed-text*"])
    result.stdout.fnmatch_lines(["*cell 1: expected stdout_contains='goodbye', got 'hello from the cell\\n'*"])
    assert "(see result)" not in result.stdout.str()
