"""Bug: ``hermes-kernel doctor`` read any ``ImportError`` of paramiko or testcontainers as a package
that is not installed, named by the module the error came from: a paramiko whose import failed
inside an installed dependency (``cannot import name 'X' from 'cryptography...'``, a cryptography
too old for it) made doctor say ``ssh NO cryptography is not installed``, of a package that is
installed. Now a missing module is named as missing, and any other import failure is quoted."""

from __future__ import annotations

import sys

import pytest

from pytest_hermes_kernel.cli import main


@pytest.fixture
def paramiko_that_fails_inside_psutil(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "paramiko").mkdir()
    (tmp_path / "paramiko" / "__init__.py").write_text("from psutil import name_this_psutil_lacks\n")
    for name in [n for n in sys.modules if n == "paramiko" or n.startswith("paramiko.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_doctor_quotes_an_import_that_fails_instead_of_calling_a_package_missing(paramiko_that_fails_inside_psutil,
                                                                                    capsys) -> None:
    assert main(["doctor", "ssh"]) == 1

    line = capsys.readouterr().out.splitlines()[0]
    assert "psutil is not installed" not in line, line
    assert "cannot import name 'name_this_psutil_lacks' from 'psutil'" in line, line
