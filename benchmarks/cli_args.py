"""Command-line argument types the benchmark scripts share (imports nothing of the kit:
``compare_checkouts.py`` runs each checkout's code only in its own subprocesses)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def count(least: int, even: bool = False) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``least`` (``even``: and even). A count of 0 was a
    StatisticsError traceback after nothing was measured (``--cells 0``), or every transport
    said unavailable (``--starts 0``); an odd ``--rounds`` of ``compare_checkouts.py`` ran BEFORE
    first in one round more than AFTER: the order bias the alternation is there to cancel."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"{n} is too few: at least {least}")
        if even and n % 2:
            raise argparse.ArgumentTypeError(f"{n} is odd: each checkout runs first in half the rounds")
        return n
    return parse
