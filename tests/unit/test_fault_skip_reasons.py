"""A fault that cannot apply on a transport skips with a reason about that transport (a
fresh-install helper saw filecell's transport_drop skip say "for local a drop is a host death")."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.faults.apply import skip_reason
from pytest_hermes_kernel.faults.spec import spec_from_table
from pytest_hermes_kernel.transports import close_transport, make_transport

DROP = spec_from_table({"kind": "transport_drop", "after_cell": 1})


@pytest.mark.parametrize(("name", "says"), [
    ("local", "a drop of local's channel is a host death: use hermes_host_sigkill"),
    ("filecell", "it has no standing stream that a drop could cut"),
])
def test_a_drop_that_cannot_apply_says_why_for_that_transport(name: str, says: str) -> None:
    transport = make_transport(name)
    try:
        reason = skip_reason([DROP], transport)
    finally:
        close_transport(transport)
    assert reason is not None and reason.startswith(f"transport_drop does not apply to the {name} transport")
    assert says in reason, reason
    assert name == "local" or "local" not in reason, reason
