"""An ssh connection kept every command it ever ran, for ever.

``SshConnection`` notes each exec channel's command for the leak checker's report of channels
left open, and forgot the notes only when that report was asked for (``open_channels``). A host
that asks for none (an agent host outside pytest, a long pytest session between leak checks)
kept one string per exec: per kernel start and end on the spawn path (3 per cycle in
``benchmarks/soak.py --transport ssh --server off``: +301 per 100 cycles) and per command of the
execute-only ssh backend (``filecell`` over ssh), never shrinking. Closed channels' notes now go
when the channel is seen closed.
"""

from __future__ import annotations

import gc

import pytest

from pytest_hermes_kernel.transports import get_transport
from pytest_hermes_kernel.transports.filecell.ssh_exec import SshExecBackend
from pytest_hermes_kernel.transports.ssh.transport import SshTransport

pytestmark = pytest.mark.usefixtures("docker_ready")

COMMANDS = 12  # past sshd's 10 sessions; with the bug each leaves its note: 12 where at most 2 may stay


def _notes_of(conn: object) -> int:
    """Strings the connection keeps about its channels (``vars`` of it, one level down)."""
    gc.collect()
    return sum(len(v) for v in vars(conn).values() if isinstance(v, (dict, set)))


def test_commands_run_one_after_another_leave_no_note_behind() -> None:
    transport = get_transport("ssh")
    assert isinstance(transport, SshTransport)
    backend = SshExecBackend.over(transport)
    assert backend.execute("echo warm", 10.0) == (0, "warm\n")
    conn = transport.current_connection
    before = _notes_of(conn)

    results = [backend.execute(f"echo {i}", 10.0) for i in range(COMMANDS)]
    code, _ = transport.run_probe("pass")

    assert results == [(0, f"{i}\n") for i in range(COMMANDS)] and code == 0
    assert transport.current_connection is conn, "one connection all along"
    assert _notes_of(conn) - before <= 2, (f"{_notes_of(conn) - before} notes of ended commands kept after "
                                           f"{COMMANDS + 1} commands")
    assert conn.open_channels() == {}, "and none of them is open"
