"""``hermes-kernel sweep --kept``: a kept kernel it could not end is a failure of the command
(exit status 1), never a success: ``sweep --kept --kernel "$ID" && echo gone`` said "gone"
while the kernel still ran (its record kept, a line on stdout the only sign)."""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept


def record(kernel_id: str, transport: str) -> kept.KeptKernel:
    now = time.time()
    return kept.KeptKernel(kernel_id=kernel_id, transport=transport, locator={}, token="t", nodeid="test_x.py::t",
                           kept_at=now, detached_at=now, ttl_s=3600.0, host_pid=1)


def test_a_kept_kernel_that_could_not_be_ended_fails_the_sweep(private_tmp, capsys):
    kept.save(record("a" * 32, "gone-plugin"))  # its transport cannot be made here: it cannot be reached

    code = main(["sweep", "--kept", "--kernel", "a" * 8])

    out = capsys.readouterr().out
    assert code == 1, out
    assert f"could not end kept kernel {'a' * 32} (gone-plugin)" in out and "its record is kept" in out
    assert [r.kernel_id for r in kept.load_all()] == ["a" * 32]


def test_a_dry_run_or_a_sweep_that_ended_everything_succeeds(private_tmp, capsys):
    kept.save(record("b" * 32, "gone-plugin"))

    assert main(["sweep", "--kept", "--dry-run"]) == 0
    assert f"would remove kept kernel {'b' * 32}" in capsys.readouterr().out
    kept.remove("b" * 32)
    assert main(["sweep", "--kept"]) == 0


@pytest.mark.parametrize("command", [["sweep", "--kept", "--kernel", ""], ["exec", "  ", "1"]], ids=["sweep", "exec"])
def test_an_empty_kernel_id_is_refused_as_empty_and_ends_nothing(private_tmp, capsys, command):
    kept.save(record("c" * 32, "gone-plugin"))

    try:
        code = main(command)
    except SystemExit as usage_error:  # (sweep's --kernel is refused as argparse refuses a usage)
        code = usage_error.code

    err = capsys.readouterr().err
    assert code == 2 and "an empty kernel id" in err and "hermes-kernel ls --ids" in err, err
    assert [r.kernel_id for r in kept.load_all()] == ["c" * 32]
