"""Numbers printed under a secret-sounding name (``total_tokens = 247201``) were redacted.

The ``NAME=value`` rule of redaction masks the value of any name holding ``TOKEN``, ``SECRET``,
``PASSWORD``, ... when it has 6 characters or more. A language model API's usage, the most common
thing an agent's cell prints, came back as ``completion_tokens: [REDACTED] total_tokens =
[REDACTED]``, and ``tokens: 1234567;`` lost its semicolon too: the output was changed where it
held no secret, and said nothing. A plain number is no credential: it is kept (a secret of the
kernel's env is still redacted wherever it shows, as a literal, numbers too).
"""

from __future__ import annotations

import pytest

USAGE = "usage: prompt_tokens=1523 completion_tokens: 245678 total_tokens = 247201; max_tokens=100000, tokens: 1234567;"


@pytest.mark.hermes_kernel(env={"HK_PIN_TOKEN": "73105528"})
def test_a_count_named_tokens_is_printed_as_it_is(hermes_kernel):
    result = hermes_kernel.execute(f"print({USAGE!r})")

    assert result.stdout == USAGE + "\n"


@pytest.mark.hermes_kernel(env={"HK_PIN_TOKEN": "73105528"})
def test_secrets_are_still_redacted(hermes_kernel):
    result = hermes_kernel.execute("import os; print('DB_PASSWORD=hunter22 api_key: \"abcdef123\" pin=' + os.environ['HK_PIN_TOKEN'])")

    assert result.stdout == "DB_PASSWORD=[REDACTED] api_key: \"[REDACTED]\" pin=[REDACTED]\n"
