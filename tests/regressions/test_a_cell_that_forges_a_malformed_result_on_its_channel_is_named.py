"""Found by a breaker helper (2026-12-06, malformed input): a cell that wrote a well-formed frame
on its worker's channel, a ``result`` for its own cell whose fields no worker sends, was taken as
its result. A ``traceback`` of ``5`` ended the host's ``execute`` in a bare ``TypeError: expected
string or bytes-like object, got 'int'``; a ``status`` of ``5`` came back as the cell's status; a
``status`` of ``"died"`` (the runner's word, never a worker's) left the live worker running, and
the next cell raised ``KernelStartError`` "the old worker ... did not end within 5 s of SIGKILL".
The runner now checks a worker's result (its status one a worker sends, each field the host reads
of its JSON type) and kills a worker that sent another: ``died``, the note naming the field, the
kernel living on. Every leg. (A well-formed result is still the cell's: see "What a cell can
break" in docs/reference.md.)
"""

from __future__ import annotations

import pytest

from tests.regressions.test_a_worker_the_runner_killed_says_why import CHANNEL

FORGED = {
    "a traceback that is a number": ({"status": "error", "ename": "X", "traceback": 5}, "its result's traceback is int"),
    "a status that is a number": ({"status": 5}, "its result's status 5 is none of ok, error, interrupted, exited"),
    "the runner's status died": ({"status": "died"}, "its result's status 'died' is none of"),
}


@pytest.mark.parametrize("what", list(FORGED))
def test_the_runner_kills_the_worker_and_names_the_field(hermes_kernel, what):
    fields, why = FORGED[what]
    code = CHANNEL + f"w.send(dict({{'type': 'result', 'id': w.cell_id}}, **{fields!r}))\nimport time\ntime.sleep(5)"

    r = hermes_kernel.execute(code)
    after = hermes_kernel.execute("6 * 7")

    assert (r.status, r.kernel.state_lost, r.kernel.signal) == ("died", True, 9), r.summary()
    assert f"the kernel runner killed the worker: {why}" in r.kernel.note, r.kernel.note
    assert (after.status, after.value) == ("ok", "42"), after.summary()
