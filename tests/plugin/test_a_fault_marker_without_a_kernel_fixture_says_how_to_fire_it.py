"""A fault marker on a test without a kernel fixture says how to fire its fault by hand.

Found by the user-reproduction round (2026-12-06): a user's agent holds its kernels in a
``KernelRegistry`` (``hermes_registry``); ``@pytest.mark.hermes_kernel_sigkill(after_cell=1)`` on
such a test errored with "needs a kernel to fault, but the test uses none of the fixtures that
apply it (hermes_kernel, hermes_kernel_factory)", and nothing said the fault can be fired on a
registry's kernel (``hermes_faults.kernel_sigkill(registry.get_or_start(key))``, which works).
Now the error ends with that hint, per marker.
"""

from __future__ import annotations

import pytest

TEST = """
import pytest
from pytest_hermes_kernel import KernelKey


@pytest.mark.{marker}
def test_registry(hermes_registry):
    hermes_registry.execute(KernelKey(owner="a"), "x = 1")
"""


@pytest.mark.parametrize("marker, hint", [
    ("hermes_kernel_sigkill(after_cell=1)", "hermes_faults.kernel_sigkill(k)"),
    ("hermes_transport_drop(after_cell=1)", "hermes_faults.transport_drop(k, mode)"),
])
def test_the_error_names_the_fixture_call_that_fires_it(pytester, run, marker, hint) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_reg=TEST.replace("{marker}", marker))

    result = run("-q")

    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert ("Hint: take one of them, or drop the marker and fire the fault on a kernel of your own (a registry's: "
            "registry.get_or_start(key)) with the hermes_faults fixture: " + hint) in " ".join(out.split()), out[-2000:]
