"""Handed case B55: on a host whose locale is not UTF-8 (a Debian image's ASCII default, a
Latin-1 login), printing non-ASCII text raised ``UnicodeEncodeError`` or was mangled.

The contract's locale cases (``pytest_hermes_kernel/contract/locales.py``) set ``LANG=C`` in the
kernel's ``env``, but that env is applied by the worker, which is forked from a runner (or a
kernel server) whose interpreter started in the far side's own locale: UTF-8 here. Cell streams
that used the locale's encoding passed them (checked). Here the runner's interpreter itself
starts with an ASCII locale encoding: a filecell backend whose shell runs in the C locale with
CPython's coercion and UTF-8 mode off (no Latin-1 locale is installed on this machine or in the
image; this is the same legacy, non-UTF-8 interpreter). The kit's own streams still carry UTF-8
exactly, and bytes that are not UTF-8 arrive as explicit replacement characters.
"""

from __future__ import annotations

import os

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import FileCellTransport, LocalShellBackend

TEXT = "héllo ✓ 日本 \U0001f600"


def test_a_kernel_whose_python_starts_in_an_ascii_locale_prints_utf8() -> None:
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    env.update(LANG="C", LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    transport = FileCellTransport(LocalShellBackend(env=env))
    try:
        with start_kernel(transport) as k:
            legacy = k.execute("import locale, sys\n(sys.flags.utf8_mode, locale.getpreferredencoding(False))")
            assert legacy.value == "(0, 'ANSI_X3.4-1968')", legacy.summary()  # the interpreter's encoding: ASCII

            printed = k.execute(f"import sys\nprint({TEXT!r})\nprint({TEXT!r}, file=sys.stderr)")
            value = k.execute(f"s = {TEXT!r}\ns")
            raw = k.execute("import subprocess\nsubprocess.run(['printf', '\\\\377\\\\376'])")
    finally:
        transport.close()
    assert printed.status == "ok", printed.summary()  # no UnicodeEncodeError from the kit's streams
    assert (printed.stdout, printed.stderr) == (TEXT + "\n", TEXT + "\n")
    assert value.value == repr(TEXT)
    assert (raw.status, raw.stdout) == ("ok", "\ufffd\ufffd")
