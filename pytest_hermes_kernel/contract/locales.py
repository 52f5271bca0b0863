"""Contract: the kernel's channel does not depend on its locale (B55).

A kernel started with ``LANG=C LC_ALL=C`` (and ``PYTHONUTF8``/``PYTHONIOENCODING`` unset) still
round-trips UTF-8 exactly: the source of a cell, what it prints, its value, and non-ASCII file
names. The kit frames bytes and decodes UTF-8 on the host; the C locale is coerced to UTF-8 by
CPython (PEP 538/540), which the kit must not undo. The kernel's ``env`` is applied by its worker,
forked from an interpreter that started in the far side's own locale, so these cases do not start
Python in the C locale: ``tests/regressions/test_a_kernel_whose_python_starts_in_an_ascii_locale_prints_utf8.py``
does (cell streams in the locale's encoding passed these cases).
"""

from __future__ import annotations

import pytest

TEXT = "héllo ✓ 日本 \U0001f600"


def _c_locale_kernel(kernel_factory, name="C"):
    """A kernel in the ``name`` locale with CPython's locale coercion off (an image without C.UTF-8)."""
    return kernel_factory(env={"LANG": name, "LC_ALL": name, "PYTHONCOERCECLOCALE": "0"})


@pytest.mark.parametrize("name", ["C", "POSIX"])
def test_c_locale_round_trips_utf8_output_and_source(kernel_factory, name):
    k = _c_locale_kernel(kernel_factory, name)

    printed = k.execute(f"import sys\nprint({TEXT!r})\nprint({TEXT!r}, file=sys.stderr)")
    value = k.execute(f"s = {TEXT!r}\ns")

    assert printed.status == "ok", printed.summary()
    assert (printed.stdout, printed.stderr) == (TEXT + "\n", TEXT + "\n")
    assert value.value == repr(TEXT)
    assert k.execute("len(s)").value == str(len(TEXT))  # the source arrived as the same characters


def test_c_locale_round_trips_non_ascii_file_names(kernel_factory):
    k = _c_locale_kernel(kernel_factory)

    r = k.execute("import os, shutil, tempfile\nd = tempfile.mkdtemp()\nopen(os.path.join(d, 'ü.txt'), 'w').write('x')\n"
                  "print(os.listdir(d))\nnames = os.listdir(d)\nshutil.rmtree(d)\nnames")

    assert r.status == "ok", r.summary()
    assert r.stdout == "['ü.txt']\n" and r.value == "['ü.txt']"
