"""Handed case B43, the report side: a canary secret given as a kernel's ``env`` (through the
marker) is in none of what a failing run shows or writes, under ``-l --tb=long
--log-level=DEBUG --junitxml``: the terminal report (locals of the failing frames, captured
logs), the JUnit XML, the error of a marker whose ``env`` value is refused. The canary is read
from a file, so the inner test's own source never holds it (pytest shows the source of a
failing test; that is the user's text, not the kit's)."""

from __future__ import annotations

import pytest

from tests.regressions.test_handed_b43_secrets_never_leak import CANARY, leaks

INNER = """
import logging
import pathlib
import pytest

CANARY_ENV = {"HK_TEST_TOKEN": pathlib.Path(__file__).with_name("canary.txt").read_text()}

@pytest.mark.hermes_kernel(env=CANARY_ENV)
def test_cell_error_and_failed_assert(hermes_kernel):
    logging.getLogger("inner").debug("kernel %r options %r", hermes_kernel, hermes_kernel.options)
    r = hermes_kernel.execute("import os\\nraise RuntimeError(os.environ['HK_TEST_TOKEN'])")
    assert r.status == "error"
    assert r.evalue == "never", (r, hermes_kernel)

@pytest.mark.hermes_kernel(env={**CANARY_ENV, "BAD": "nul\\0"})
def test_refused_env(hermes_kernel):
    pass
"""


def test_a_canary_in_kernel_env_is_not_in_the_report_or_junit_xml(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_inner=INNER)
    (pytester.path / "canary.txt").write_text(CANARY)
    result = run("-l", "--tb=long", "--log-level=DEBUG", "--junitxml=out.xml", "-rA")
    result.assert_outcomes(failed=1, errors=1)
    text = "\n".join(result.outlines + result.errlines)
    assert "RuntimeError" in text and "BAD" in text and "HK_TEST_TOKEN" in text  # it is the run we meant
    assert not leaks(text), [line for line in result.outlines if leaks(line)][:5]
    assert not leaks((pytester.path / "out.xml").read_bytes())
