"""``benchmarks/silent_ssh_kills.py``: the shutdowns are timed only once the keepalives found the
paused sshd dead, as its figure says.

Seen (breaker review, 2026-12-06): when the keepalives had not flagged the connection within its
30 s wait, the script went on and timed the shutdowns anyway, on a connection not known dead (each
kill's wait then is the keepalives', not the short connect tries the figure is about).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support import bench_module


def test_no_figure_when_the_keepalives_never_found_the_host_dead(monkeypatch: pytest.MonkeyPatch) -> None:
    kills = bench_module("silent_ssh_kills")
    clock = [0.0]
    paused: list[str] = []
    shut: list[int] = []
    api = SimpleNamespace(pause=lambda cid: paused.append("pause"), unpause=lambda cid: paused.append("unpause"))
    transport = SimpleNamespace(sshd=SimpleNamespace(docker=SimpleNamespace(api=api)), sshd_container_id="c1",
                                current_connection=SimpleNamespace(unresponsive=None), connect_timeout=10.0)

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.setattr(kills, "make_transport", lambda *a, **k: transport)
    monkeypatch.setattr(kills, "close_transport", lambda t: None)
    monkeypatch.setattr(kills, "start_kernel", lambda t: SimpleNamespace(shutdown=lambda: shut.append(1)))
    monkeypatch.setattr(kills.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(kills.time, "sleep", sleep)
    with pytest.raises(SystemExit, match="did not find the paused sshd dead within 30 s"):
        kills.main(["--kernels", "2"])
    assert shut == [] and paused == ["pause", "unpause"]
