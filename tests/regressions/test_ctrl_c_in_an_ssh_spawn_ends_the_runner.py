"""Bug: an ssh launch on the spawn path (``server=False``) cut short by Ctrl-C after the far side
had started the runner ends it by the kernel id (``end_failed_launch``); a second Ctrl-C during
that kill cut the kill itself short, and the runner and its kernel dir stayed on the host, owned
by no one, until the runner's orphan timer. The cleanup now runs to its end with the signal held
(:func:`~pytest_hermes_kernel.kernel.control.despite_signals`), and the second
``KeyboardInterrupt`` propagates after it.

The signals come at exact points: the first as the runner reported ready (its pid known to the
launch, not yet to anyone else), the second as the kill script goes out.
"""

from __future__ import annotations

import shlex
import signal
from typing import Any

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import close_transport, make_transport
from tests.support import ctrl_c_first


@pytest.mark.parametrize("presses", [1, 2], ids=["ctrl-c", "ctrl-c-again-during-the-kill"])
def test_an_ssh_spawn_cut_short_leaves_no_runner_and_no_dir(docker_ready, monkeypatch, presses):
    transport = make_transport("ssh", server=False)
    started: list[tuple[str, str]] = []  # (kernel id, kernel dir)
    start_runner = transport._start_runner

    def start_runner_then_ctrl_c(conn: Any, runner: str, kdir: str, spec: Any, python: str) -> int:
        start_runner(conn, runner, kdir, spec, python)
        started.append((spec.kernel_id, kdir))
        raise KeyboardInterrupt

    monkeypatch.setattr(transport, "_start_runner", start_runner_then_ctrl_c)
    if presses == 2:
        monkeypatch.setattr(transport, "run_script", ctrl_c_first(transport.run_script))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            start_kernel(transport)
        signal.signal(signal.SIGINT, previous)
        monkeypatch.undo()

        [(kernel_id, kdir)] = started
        assert transport.kernel_processes(kernel_id) == [], "the runner the launch started must be ended"
        _, out, _ = transport.connection().run(f"test -e {shlex.quote(kdir)} && echo there || echo gone", timeout=15.0)
        assert out.strip() == b"gone", f"the kernel dir {kdir} must be removed"
    finally:
        signal.signal(signal.SIGINT, previous)
        close_transport(transport)
