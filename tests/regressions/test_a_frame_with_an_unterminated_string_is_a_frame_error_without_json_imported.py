"""Found by a breaker helper (2026-12-06, fuzzing the frame codec): a frame whose header holds an
unterminated string or a bad escape (``{"t``, ``{"a":"\\x"}``) read by a process that had not
imported ``json`` was no ``FrameError`` but ``SystemError: <_json.Scanner object ...> returned
NULL without setting an exception``: the codec uses ``_json``'s C scanner alone (a filecell
poll's client imports no ``json``), and on Python 3.10 and 3.11 that scanner's error for a bad
string is ``json.decoder``'s. Every reader of frames catches ``FrameError`` only: such a frame
would have ended the process reading it (today's runner happens to import ``json`` before it
reads a worker's frames). Now it is a ``FrameError``, with ``json``'s own message.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, FrameError

HEADERS = [b'{"t', b'{"a":"\\x"}', b'{"a":"\\u12', b'["abc']


@pytest.mark.parametrize("header", HEADERS)
def test_the_codec_says_frame_error_without_json_imported(header, pytester):
    """In a fresh interpreter that has not imported ``json`` (as the runner's), every such header
    is a :class:`FrameError`."""
    pytester.makepyfile(check=f"""
        import struct, sys
        from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, FrameError
        assert "json" not in sys.modules
        decoder = FrameDecoder()
        decoder.feed(struct.pack(">II", 4 + {len(header)}, {len(header)}) + {header!r})
        try:
            decoder.next_frame()
        except FrameError as exc:
            print("FrameError:", exc)
    """)
    result = pytester.run(__import__("sys").executable, "check.py")

    assert result.ret == 0, result.stderr.str()
    assert "FrameError: frame header is not JSON" in result.stdout.str()


def test_the_hosts_decoder_says_frame_error_too():
    decoder = FrameDecoder()
    decoder.feed(b"\x00\x00\x00\x07\x00\x00\x00\x03" + b'{"t')
    with pytest.raises(FrameError, match="frame header is not JSON"):
        decoder.next_frame()
