"""Seen following the skip hint of ``hermes_host_sigkill`` on the filecell leg (2026-12-07): "give the
transport a short orphan_timeout to test host death". Its bound with ``orphan_timeout=5`` was 8 s,
and the kernel outlived it (``kernel ... outlived its SIGKILLed host by more than 8 s; still
alive: ... (its runner) ... (its worker)``).
The kernel did end, but later: the poll in flight as the host died stays attached for its
window (``poll_window_s``, 20 s) and then a holder for ``hold_s`` (600 s, or until the cell
ends), and the orphan timer only starts once nothing is attached (25.7 s with a 20-s window and
2-s hold). The bound now counts them (``Transport.attached_after_host_s``) and the skip says so. Measured
without the harness (a host process SIGKILLed during a 60-s cell): orphan_timeout=5, poll_window_s=20,
hold_s=2: the runner ended 25.7 s later; poll_window_s=2: 8.6 s; each within the new bound.
"""

from __future__ import annotations

from pytest_hermes_kernel import KernelOptions
from pytest_hermes_kernel.faults import apply
from pytest_hermes_kernel.faults.apply import host_death_bound, plan_faults
from pytest_hermes_kernel.faults.spec import hermes_host_sigkill
from pytest_hermes_kernel.transports import make_transport

def test_the_bound_counts_what_stays_attached_and_the_skip_names_it() -> None:
    short = make_transport("filecell", orphan_timeout=5, poll_window_s=2.0, hold_s=3.0)
    default = make_transport("filecell")
    try:
        assert host_death_bound(short, 60.0) == 5 + 2.0 + 3.0 + apply.ORPHAN_DEATH_MARGIN_S
        skip = plan_faults([hermes_host_sigkill(during_cell=2)], default, KernelOptions()).skip
        assert skip is not None and "orphan timer (1800 s)" in skip, skip
        assert "after a client that stays attached 620 s" in skip and "poll_window_s and hold_s" in skip, skip
    finally:
        short.close()
        default.close()

