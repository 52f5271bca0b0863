"""The contract suite's ``kernel`` fixture said "A kernel with default options", but it gets the
run's and the test's: ``--hermes-timeout`` (60 s by default, where ``KernelOptions().timeout`` is
``None``) and the ``hermes_kernel`` marker's options, as ``hermes_kernel_factory`` gives them (a
docstring check, 2026-12-06). A backend author reading it expected cells without a budget."""

from __future__ import annotations

import importlib

TEST = """
import pytest
from pytest_hermes_kernel.contract import kernel, kernel_factory  # noqa: F401

@pytest.mark.hermes_kernel(max_output_bytes=4096)
def test_k(kernel):
    assert (kernel.options.timeout, kernel.options.max_output_bytes) == (7.0, 4096)
"""


def test_the_contract_kernel_fixtures_options_are_the_runs(pytester, run):
    pytester.makepyfile(TEST)
    run("--hermes-timeout=7").assert_outcomes(passed=1)
    fixture = importlib.import_module("pytest_hermes_kernel.contract").kernel  # (not a name here: no fixture of this module)
    doc = " ".join((fixture.__doc__ or "").split())
    assert "--hermes-timeout" in doc and "marker" in doc, doc
