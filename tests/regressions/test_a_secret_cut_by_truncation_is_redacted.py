"""A secret that output truncation cut in two showed, all but its last characters, in the result.

Redaction replaces a secret's whole value wherever it appears; a stream (or a value, an error's
message) over its cap keeps a head and a tail around a marker, and each side was redacted on its
own. A secret printed across the cut left its first characters at the head's end (23 of 25 shown,
``aaaahunter2-very-secret-val``) or its last at the tail's start, unredacted. The piece of a secret
(4 characters or more) left at either side of a cut is now masked as well.
"""

from __future__ import annotations

import pytest

SECRET = "hunter2-" + "canary-cut-9a7e1d2c"
PADS = range(300, 460)


def pieces(secret: str, size: int = 8) -> list[str]:
    return [secret[i:i + size] for i in range(len(secret) - size + 1)]


@pytest.mark.hermes_kernel(max_output_bytes=1024, env={"HK_CUT_TOKEN": SECRET})
def test_no_piece_of_a_secret_survives_a_truncation_cut(hermes_kernel):
    hermes_kernel.execute("import os; s = os.environ['HK_CUT_TOKEN']")
    shown = []
    for pad in PADS:
        text = f"('a' * {pad} + s + 'b' * 3000)"
        printed = hermes_kernel.execute(f"print{text}; {text}")
        raised = hermes_kernel.execute(f"raise ValueError{text}")
        assert printed.stdout_truncated and printed.value_truncated, printed.summary()
        assert "characters dropped" in raised.evalue, raised.summary()
        shown += [printed.stdout, printed.value, raised.evalue, raised.traceback]
    leaked = {piece for piece in pieces(SECRET) for text in shown if piece in text}
    assert not leaked
