"""Unit: decoding, ANSI stripping, redaction and environment scrubbing of kernel output."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_hermes_kernel.kernel.runner.capture import BoundedCapture
from pytest_hermes_kernel.kernel.output import (REDACTED, clean, decode_capture, redact, scrub_env, secret_values,
                                                strip_ansi)


class TestDecodeCapture:
    def test_untruncated_text(self):
        out = decode_capture("héllo\n".encode(), b"", 0)
        assert (out.text, out.truncated, out.dropped_bytes) == ("héllo\n", False, 0)

    def test_full_head_and_tail_without_drop_are_contiguous(self):
        data = "ab✓cd".encode()
        out = decode_capture(data[:3], data[3:], 0)  # the ✓ is split between head and tail
        assert out.text == "ab✓cd" and not out.truncated

    def test_invalid_bytes_become_replacement_characters(self):
        assert decode_capture(b"raw:\xff\xfe\n", b"", 0).text == "raw:\ufffd\ufffd\n"

    def test_truncated_keeps_head_and_tail_with_marker(self):
        out = decode_capture(b"HEAD", b"TAIL", 100)
        assert out.truncated and out.dropped_bytes == 100
        assert out.text == "HEAD\n[... 100 bytes dropped ...]\nTAIL"

    def test_character_cut_at_the_head_boundary_is_dropped_and_counted(self):
        euro = "€".encode()  # 3 bytes
        out = decode_capture(b"ab" + euro[:2], euro[1:] + b"cd", 10)
        assert "\ufffd" not in out.text
        assert out.text.startswith("ab\n") and out.text.endswith("\ncd")
        assert out.dropped_bytes == 10 + 2 + 2  # two bytes at the end of head, two continuation bytes

    def test_ansi_and_secrets_are_cleaned_on_both_sides(self):
        out = decode_capture(b"\x1b[1mbold\x1b[0m sk-abcdefghijklmnopqrstuvwx", b"mysecretvalue!", 5,
                             secrets=["mysecretvalue!"])
        assert "\x1b" not in out.text and "bold" in out.text
        assert "sk-abc" not in out.text and "mysecretvalue" not in out.text
        assert out.text.count(REDACTED) == 2



class TestDecodeCaptureBounds:
    """Where the head/tail split and the truncation marker begin (against mutation survivors)."""

    def test_a_drop_with_no_tail_is_still_marked(self):
        out = decode_capture(b"HEAD", b"", 1)
        assert (out.text, out.truncated, out.dropped_bytes) == ("HEAD\n[... 1 bytes dropped ...]\n", True, 1)

    def test_a_single_byte_dropped_between_head_and_tail_is_marked(self):
        out = decode_capture(b"HEAD", b"TAIL", 1)
        assert (out.text, out.truncated, out.dropped_bytes) == ("HEAD\n[... 1 bytes dropped ...]\nTAIL", True, 1)

    def test_a_full_head_and_its_tail_drop_nothing(self):
        out = decode_capture(b"HE", b"AD", 0)
        assert (out.text, out.truncated, out.dropped_bytes) == ("HEAD", False, 0)

    @pytest.mark.parametrize(("tail", "text", "dropped"), [
        (b"\x80ab", "ab", 11),  # the lowest continuation byte
        (b"\xbfab", "ab", 11),  # the highest
        ("\U0001F600".encode()[1:] + b"ab", "ab", 13),  # the three of a 4-byte character
        (b"\x80\x80\x80\x80ab", "\ufffdab", 13),  # never more than three: the fourth is invalid
        (b"\x9f\x98\x80", "", 13),  # a tail of continuation bytes only
        (b"\x7fab", "\x7fab", 10),  # ASCII is never skipped
        (b"\xc0ab", "\ufffdab", 10),  # nor a byte that cannot continue a character
    ], ids=["0x80", "0xbf", "three", "not-four", "only-continuation", "ascii", "not-continuation"])
    def test_continuation_bytes_of_a_character_cut_by_the_drop_are_skipped_and_counted(self, tail, text, dropped):
        out = decode_capture(b"HEAD", tail, 10)
        assert out.text == f"HEAD\n[... {dropped} bytes dropped ...]\n{text}" and out.dropped_bytes == dropped

    def test_a_decoded_stream_is_a_frozen_value(self):
        with pytest.raises(dataclasses.FrozenInstanceError):
            decode_capture(b"x", b"", 0).text = "y"  # type: ignore[misc]

    def test_secrets_is_a_keyword_only_argument(self):
        with pytest.raises(TypeError):
            decode_capture(b"x", b"", 0, ["12345678"])  # type: ignore[misc]

class TestStripAnsi:
    @pytest.mark.parametrize("raw, clean", [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[2K\x1b[1Gline", "line"),
        ("\x1b]0;title\x07text", "text"),
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("a\x1bMb", "ab"),
        ("plain [31m text", "plain [31m text"),
    ])
    def test_escape_sequences(self, raw, clean):
        assert strip_ansi(raw) == clean


class TestRedact:
    @pytest.mark.parametrize("secret", [
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "ghp_" + "a1B2" * 9,
        "github_pat_" + "A" * 40,
        "xoxb-1234567890-abcdef",
        "AKIAABCDEFGHIJKLMNOP",
        "AIza" + "x" * 35,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIz",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    ])
    def test_token_shapes(self, secret):
        text = redact(f"value: {secret} end")
        assert secret not in text and REDACTED in text and text.endswith(" end")

    def test_assignments_keep_the_name(self):
        assert redact("DB_PASSWORD=hunter22 ok") == f"DB_PASSWORD={REDACTED} ok"
        assert redact('api_key: "abcdef123"') == f'api_key: "{REDACTED}"'

    def test_bearer_and_url_passwords(self):
        assert redact("Authorization: Bearer abcdefghijklmnopqrstu") == f"Authorization: Bearer {REDACTED}"
        assert redact("postgres://user:pa55word@db/x") == f"postgres://user:{REDACTED}@db/x"

    def test_literal_secrets_of_eight_chars_or_more(self):
        assert redact("x=longliteral y", ["longliteral"]) == f"x={REDACTED} y"
        assert redact("short one", ["short"]) == "short one"  # too short to redact safely
        assert redact("a 12345678 b", ["12345678"]) == f"a {REDACTED} b"  # eight: the shortest redacted
        assert redact("a 1234567 b", ["1234567"]) == "a 1234567 b"

    @pytest.mark.parametrize("text", ["hunter22", "hunter22\n", "x=hunter22", "a://b:c@x"])
    def test_short_texts_are_redacted_too(self, text):
        assert "hunter22" not in clean(text, ["hunter22"]) and "c@x" not in clean(text)

    def test_the_secret_values_are_those_of_secret_named_variables_of_eight_characters_or_more(self):
        env = {"API_TOKEN": "12345678", "DB_PASSWORD": "1234567", "PATH": "/usr/local/bin:/usr/bin",
               "HOME": "/home/someone"}
        assert secret_values(env) == ("12345678",)

    def test_ordinary_text_is_untouched(self):
        text = "BYPASS=1 compass heading 270, token count 5"
        assert redact(text) == text


class TestScrubEnv:
    ENV = {"PATH": "/bin", "HOME": "/root", "LC_ALL": "C", "OPENAI_API_KEY": "sk-x", "GH_TOKEN": "t",
           "DB_PASSWORD": "p", "AWS_SECRET_ACCESS_KEY": "s", "MY_SETTING": "1", "BYPASS": "1"}

    def test_secret_names_dropped_and_non_safe_names_dropped(self):
        out = scrub_env(self.ENV)
        assert out == {"PATH": "/bin", "HOME": "/root", "LC_ALL": "C"}

    def test_keep_all_keeps_non_secret_names(self):
        out = scrub_env(self.ENV, keep_all=True)
        assert set(out) == {"PATH", "HOME", "LC_ALL", "MY_SETTING", "BYPASS"}

    def test_allow_list_and_extra(self):
        out = scrub_env(self.ENV, allow=["GH_TOKEN"], extra={"HERMES_KERNEL_ID": "k", "PATH": "/usr/bin"})
        assert out["GH_TOKEN"] == "t" and out["HERMES_KERNEL_ID"] == "k" and out["PATH"] == "/usr/bin"
        assert "OPENAI_API_KEY" not in out

    def test_allow_and_extra_are_keyword_only(self):
        with pytest.raises(TypeError):
            scrub_env(self.ENV, ["GH_TOKEN"])  # type: ignore[misc]


class TestBoundedCapture:
    def test_under_the_cap_everything_is_kept(self):
        cap = BoundedCapture(100)
        cap.add(b"a" * 30)
        cap.add(b"b" * 30)
        head, tail, total, dropped = cap.take()
        assert head + tail == b"a" * 30 + b"b" * 30 and total == 60 and dropped == 0

    def test_over_the_cap_keeps_40_percent_head_and_60_percent_tail(self):
        cap = BoundedCapture(100)
        for i in range(100):
            cap.add(bytes([65 + i % 26]) * 10)
        head, tail, total, dropped = cap.take()
        assert (len(head), len(tail), total, dropped) == (40, 60, 1000, 900)
        assert head == b"A" * 10 + b"B" * 10 + b"C" * 10 + b"D" * 10
        assert tail.endswith(bytes([65 + 99 % 26]) * 10)

    def test_take_starts_a_new_capture(self):
        cap = BoundedCapture(10)
        cap.add(b"x" * 50)
        cap.take()
        assert cap.take() == (b"", b"", 0, 0)
