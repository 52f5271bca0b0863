"""``benchmarks/starts.py``: a figure labelled with a path (kernel server, spawn) is measured on
kernels that took that path, and "N kernels at once" on N distinct kernels.

Seen (breaker review, 2026-12-06): only the untimed warm-up kernel's ``kernel.note`` was kept, so
timed starts that fell back to a plain spawn (a kernel server unavailable) were reported as the
"server path" figure, without a note (so were the default path's start, round trip and idle
memory figures); the "64 kernels at once" and "8 forked from one server"
figures never looked at which kernels they had.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.support import bench_module

FELL_BACK = "kernel server unavailable (refused): started by a plain spawn"


class _Kernel:
    """A started kernel as the benchmark sees it: its launch label, pids and first result."""

    def __init__(self, label: str, pids: tuple[int, int], note: str = "") -> None:
        self.launched = SimpleNamespace(label=label)
        self.runner_pid, self.pid = pids
        self._note = note

    def start(self) -> _Kernel:
        return self

    def execute(self, code: str) -> Any:
        return SimpleNamespace(value="1", kernel=SimpleNamespace(note=self._note))

    def shutdown(self) -> None:
        pass

    def __enter__(self) -> _Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _forked(i: int) -> _Kernel:
    return _Kernel(f"local pid {100 + i}, forked by kernel server 7", (100 + i, 200 + i))


def _spawned(i: int, note: str = "") -> _Kernel:
    return _Kernel(f"local pid {100 + i}", (100 + i, 200 + i), note)


def test_a_server_path_whose_starts_fell_back_to_a_spawn_gives_no_server_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_module("run")
    kernels = iter([_forked(0), _forked(1), _spawned(2, FELL_BACK), _forked(3), _spawned(4), _spawned(5)])
    monkeypatch.setattr(run.starts, "start_kernel", lambda transport: next(kernels))
    monkeypatch.setattr(run.starts, "get_transport", lambda name: SimpleNamespace(name=name))
    with pytest.raises(RuntimeError, match="1 of 3 kernels were started by the spawn path, not the server path"):
        run.starts.path_figures("local", 3)


def test_a_spawn_path_whose_kernels_were_forked_gives_no_spawn_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_module("run")
    kernels = iter([_forked(0), _forked(1), _forked(2), _spawned(3), _forked(4), _spawned(5)])
    monkeypatch.setattr(run.starts, "start_kernel", lambda transport: next(kernels))
    monkeypatch.setattr(run.starts, "get_transport", lambda name: SimpleNamespace(name=name))
    monkeypatch.setattr(run.starts, "make_transport", lambda name, server: SimpleNamespace(name=name, close=lambda: None))
    with pytest.raises(RuntimeError, match="1 of 2 kernels were started by the server path, not the spawn path"):
        run.starts.path_figures("local", 2)


def test_the_idle_memory_figure_is_of_kernels_forked_by_one_server(monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_module("run")
    kernels = iter([_forked(0), _Kernel("local pid 101, forked by kernel server 8", (101, 201))])
    monkeypatch.setattr(run.starts, "start_kernel", lambda transport: next(kernels))
    monkeypatch.setattr(run.starts, "get_transport", lambda name: SimpleNamespace(name=name))
    with pytest.raises(RuntimeError, match="2 kernels forked by 2 servers, not one"):
        run.starts.memory_per_kernel(2)


@pytest.mark.parametrize(("made", "said"), [
    (lambda i: _Kernel("local pid 100, forked by kernel server 7", (100, 200)), "1 distinct kernels"),
    (_spawned, "4 of 4 kernels were started by the spawn path, not the server path"),
])
def test_kernels_at_once_are_that_many_distinct_kernels_on_the_path_named(
        made: Any, said: str, monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_module("run")
    count = iter(range(1000))
    monkeypatch.setattr(run.starts, "KernelHandle", lambda transport, options: made(next(count)))
    monkeypatch.setattr(run.starts, "start_kernel", lambda transport: _forked(999))
    monkeypatch.setattr(run.starts, "make_transport", lambda name, server: SimpleNamespace(name=name, close=lambda: None))
    with pytest.raises(RuntimeError, match=said):
        run.starts.concurrent_starts(4)


def test_the_default_paths_figures_are_not_of_spawned_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_module("run")
    kernels = iter([_forked(0), _forked(1), _spawned(2, FELL_BACK), _spawned(3)])
    monkeypatch.setattr(run.measures, "start_kernel", lambda transport: next(kernels))
    monkeypatch.setattr(run.measures, "get_transport", lambda name: SimpleNamespace(name=name))
    with pytest.raises(RuntimeError, match="docker kernel figures: 2 of 3 kernels were started by the spawn path"):
        run.measures.kernel_figures("docker", cells=10, starts=2)


def test_idle_memory_per_kernel_is_supervisor_and_worker_in_mb_of_10_to_the_6_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """They were MiB (2^20 bytes) labelled MB, while ``value_memory.py``'s MB are 10^6 bytes."""
    run = bench_module("run")
    kernels = iter([_forked(0), _forked(1)])
    read: list[int] = []

    def process(pid: int) -> Any:
        read.append(pid)
        return SimpleNamespace(memory_full_info=lambda: SimpleNamespace(pss=3 * 10**6, uss=10**6))

    monkeypatch.setattr(run.starts, "start_kernel", lambda transport: next(kernels))
    monkeypatch.setattr(run.starts, "get_transport", lambda name: SimpleNamespace(name=name))
    monkeypatch.setattr(run.starts.psutil, "Process", process)
    monkeypatch.setattr(run.starts.time, "sleep", lambda s: None)
    got = run.starts.memory_per_kernel(2)
    assert sorted(read) == [100, 101, 200, 201]  # each kernel's supervisor and worker, nothing else
    assert got == {"kernels": 2, "idle_pss_mb": 6.0, "idle_uss_mb": 2.0}
