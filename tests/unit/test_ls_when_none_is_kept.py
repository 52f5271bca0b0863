"""``hermes-kernel ls`` with no kept kernel to list says so, and where it looked: it printed its
header row alone, which reads like a table whose rows failed to load (and the records of another
``TMPDIR`` are not seen). The exit status stays 0 (an empty list is an answer), and ``ls --ids``
prints nothing at all, for scripts."""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept


def test_ls_says_no_kernel_is_kept_and_where_it_looked(private_tmp, capsys):
    code = main(["ls"])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(f"no kernel is kept for post-mortem: no record in {kept.kept_dir(create=False)}\n"), out
    assert "KERNEL ID" not in out
    assert "`pytest --hermes-keep-failed` keeps a failed test's kernels" in out and "same TMPDIR" in out


def test_ls_ids_prints_nothing_when_none_is_kept(private_tmp, capsys):
    assert main(["ls", "--ids"]) == 0
    assert capsys.readouterr() == ("", "")


def test_ls_test_says_none_was_kept_by_that_test_when_others_were(private_tmp, capsys):
    now = time.time()
    kept.save(kept.KeptKernel(kernel_id="c" * 32, transport="local", locator={}, token="t",
                              nodeid="test_x.py::test_load[local]", kept_at=now, detached_at=now, ttl_s=3600.0,
                              host_pid=1))

    code = main(["ls", "--test", "test_y.py"])

    assert code == 0
    assert capsys.readouterr().out == ("no kernel kept for post-mortem by test_y.py (1 kept by other tests: "
                                       "`hermes-kernel ls` lists them)\n")
    assert main(["ls", "--ids", "--test", "test_y.py"]) == 0
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("command", ["exec", "attach"])
def test_exec_and_attach_write_to_the_streams_of_the_call(private_tmp, command):
    """``exec_cell``/``attach_console`` took ``sys.stdout``/``sys.stderr`` when the module was
    imported: a caller's redirect (or pytest's capture begun later) never saw their words."""
    import contextlib
    import io

    from pytest_hermes_kernel import postmortem

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = (postmortem.exec_cell("0123456789ab", "1") if command == "exec"
                else postmortem.attach_console("0123456789ab", stdin=io.StringIO("")))
    assert code == 2
    assert "hermes-kernel: " in err.getvalue() and "0123456789ab" in err.getvalue(), err.getvalue()


@pytest.mark.parametrize(("ttl_s", "shown"), [(3600.0, "3600 s"), (3e5, "3.5 d"), (3e6, "35 d"), (1e300, "> 99999 d")])
def test_ls_shows_a_long_ttl_in_days_and_a_huge_one_in_a_few_characters(private_tmp, capsys, ttl_s, shown):
    """A TTL of ``1e300`` (the plugin takes it: the kernel lives until swept) listed a 300-digit
    EXPIRES IN that pushed the row's other columns off the screen."""
    now = time.time()
    kept.save(kept.KeptKernel(kernel_id="d" * 32, transport="local", locator={}, token="t",
                              nodeid="test_x.py::test_load[local]", kept_at=now, detached_at=now, ttl_s=ttl_s,
                              host_pid=1))

    assert main(["ls"]) == 0

    header, row = capsys.readouterr().out.splitlines()
    assert row[header.index("EXPIRES IN"):header.index("ALIVE")].strip() in (shown, shown.replace("3600", "3599"))
    assert len(row) < 160, row


def test_sweep_kept_that_finds_none_says_where_it_looked(private_tmp, capsys):
    """A third breaker helper: ``sweep --kept`` under another ``TMPDIR`` than the run that kept a
    kernel printed ``sweep: 0 kept kernels`` and nothing else, while the kernel ran on."""
    assert main(["sweep", "--kept"]) == 0

    assert capsys.readouterr().out == (
        "sweep: 0 kept kernels\n"
        f"(no record in {kept.kept_dir(create=False)}: records are under the temp dir of the run that kept them; "
        "run `hermes-kernel sweep --kept` with the same TMPDIR)\n")
