"""A kept kernel's record that is valid JSON with the right keys but values of the wrong type
(written by hand, by another version, or damaged) is skipped, as an unreadable one is: it made
every ``hermes-kernel ls``, ``exec``, ``attach`` and ``sweep`` end in a traceback
(``AttributeError: 'list' object has no attribute 'get'``, ``TypeError: can only concatenate
str (not "int") to str``), for every other kept kernel too, and a docker run's end said
"could not release the shared container". A record whose kernel id is not its file's name is
skipped too (ending it removed ``<kept dir>/<kernel id>.json``: ``../../x`` is outside).

Skipped, but never silently: ``ls`` and ``sweep`` name the files they could not read (a record no
command reads is never listed nor swept, so it sat in the kept dir unseen)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.errors import ConfigError

GOOD = "a" * 32


def _write(name: str, **fields: object) -> None:
    now = time.time()
    record = {"kernel_id": name, "transport": "local", "locator": {}, "token": "t", "nodeid": "t.py::t",
              "kept_at": now, "detached_at": now, "ttl_s": 3600.0, "host_pid": 1, **fields}
    path = Path(kept.kept_dir()) / f"{name}.json"
    path.write_text(json.dumps(record), encoding="utf-8")


@pytest.fixture
def bad_records(private_tmp: Path) -> None:
    """One good record beside several of the wrong shape."""
    _write(GOOD)
    _write("b" * 32, locator=[])
    _write("c" * 32, detached_at="2026-01-01")
    _write("d" * 32, kernel_id=None)
    _write("e" * 32, kernel_id="../../x")
    _write("f" * 32, ttl_s=True, host_pid="1")


def test_records_of_the_wrong_shape_are_skipped(bad_records: None) -> None:
    assert [r.kernel_id for r in kept.load_all()] == [GOOD]
    assert [r.kernel_id for r in kept.unexpired()] == [GOOD]
    with pytest.raises(ConfigError, match="no kept kernel 'c'"):
        kept.find("c")


@pytest.mark.parametrize("argv", [["ls"], ["ls", "--test", "t.py"], ["sweep", "kept", "--dry-run"],
                                  ["sweep", "--kept", "--dry-run"], ["exec", "zzz", "1"]],
                         ids=["ls", "ls-test", "sweep-kept-kind", "sweep-kept", "exec"])
def test_the_commands_answer_beside_a_record_of_the_wrong_shape(bad_records: None, argv: list[str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)

    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == (2 if argv[0] == "exec" else 0), out + err
    if argv[0] == "ls":
        assert GOOD in out and "b" * 32 not in out
    if argv[0] in ("ls", "sweep"):
        said = err if argv[0] == "ls" else out
        assert f"5 file(s) in {kept.kept_dir()} are not kept-kernel records this version can read" in said, said
        assert f"{'b' * 32}.json, {'c' * 32}.json" in said, said
    if argv[0] == "exec":
        assert "no kept kernel 'zzz'" in err


def test_ls_ids_keeps_its_output_ids_alone_and_says_what_it_skipped_on_stderr(
        bad_records: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "--ids"]) == 0

    out, err = capsys.readouterr()
    assert out == f"{GOOD}\n"
    assert "5 file(s)" in err and "left alone" in err, err
