"""Turning captured bytes into the text a :class:`CellResult` carries.

The kernel runner keeps, per stream, the first 40 % and the last 60 % of the cap (the split
the seed system used) and counts what it dropped. Here the host decodes that as UTF-8 (invalid
bytes become U+FFFD; a character cut by the head/tail boundary is dropped and counted, never
mangled), strips ANSI escapes and redacts secrets before the text leaves the API.
Also here: the environment a kernel starts with, scrubbed of secret-looking variables.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from dataclasses import dataclass
from urllib.parse import unquote

MARKER_RESERVE_BYTES = 96
"""Bytes of the cap kept free for the truncation marker, so ``len(text) <= cap`` holds."""

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()*+][0-9A-Za-z]|[@-Z\\-_])"
                   r"|\x9b[0-?]*[ -/]*[@-~]")

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple((re.compile(p), n) for p, n in (
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----", ("-----BEGIN",)),
    (r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9_-]{2,}-)?[A-Za-z0-9_-]{20,}", ("k-",)),
    (r"\bgh[pousr]_[A-Za-z0-9]{30,}\b", ("gh",)),
    (r"\bgithub_pat_[A-Za-z0-9_]{30,}\b", ("github_pat_",)),
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b", ("xox",)),
    (r"\bAKIA[0-9A-Z]{16}\b", ("AKIA",)),
    (r"\bAIza[0-9A-Za-z_-]{35}\b", ("AIza",)),
    (r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b", ("eyJ",)),
))
"""Token shapes, each with the literals one of which any match contains (searched first: a
literal search is a fast C pass, while a regex scan costs ~0.1 s per 5 MiB and pattern)."""
_BEARER = re.compile(r"(?i)\b(bearer|token|authorization:)\s+[A-Za-z0-9._~+/=-]{16,}")
_BEARER_WORDS = ("bearer", "token", "authorization:")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*:)([^/\s\"<>`{}|\\^]+)@")
"""A URL's password: after an empty user too (``redis://:pw@cache``), and up to the last ``@`` of
the authority (``postgres://app:p@ss@db``): both showed whole, or all but its first piece. A
character no URL holds (``"<>`{}|\\^``) ends it: ``{"url":"http://h:8080","mail":"a@b"}`` lost
``8080","mail":"a`` to the mask."""
_ASSIGN = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|CREDENTIALS?)[A-Z0-9_]*)"
    r"(\s*[=:]\s*)(['\"]?)(?![0-9][0-9_.,]*(?:[\s'\";)}\]]|$))([^\s'\"]{6,})\3")
"""``NAME=value`` where NAME sounds secret; a plain number is no credential (``total_tokens = 247201``:
a model API's usage, the commonest thing an agent's cell prints, came back ``[REDACTED]``)."""
_ASSIGN_WORDS = ("password", "passwd", "secret", "token", "api", "credential")
"""Lower-case literals one of which every ``_ASSIGN`` match contains (``_ASSIGN`` alone scans at
~0.2 s per MiB: it is run only when one is there)."""

REDACTED = "[REDACTED]"

SECRET_NAME_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASSWD", "AUTH", "DSN",
                     "WEBHOOK", "CREDS", "BEARER", "APIKEY", "PASSPHRASE", "SSHPASS", "JWT", "COOKIE")
"""A variable whose upper-cased name contains one of these is dropped from a kernel's
environment (the seed system's list, with ``GPG_PASSPHRASE``, sshpass's ``SSHPASS``, a CI job's
OIDC token ``CI_JOB_JWT`` and a ``SESSION_COOKIE``; a bare ``PASS`` is no word: BYPASS, COMPASS)."""
SECRET_NAME_PARTS = frozenset({"PASS", "PWD"})
"""A name of two or more parts (split at ``_`` and other non-alphanumerics) one of which is one of
these looks secret too: ``DB_PASS``, ``SMTP_PASS``, ``MYSQL_PWD`` (the mysql client's password)
reached every kernel and printed whole; the shell's ``PWD`` and ``OLDPWD`` are one part each."""
SECRET_LAST_PARTS = frozenset({"PW", "PAT"})
"""A last name part that looks secret: ``REDIS_PW``; a personal access token, ``GITHUB_PAT`` (R's
remotes and usethis), ``AZURE_DEVOPS_EXT_PAT`` (the az devops CLI's), which reached every kernel
(Playwright's ``PW_TEST_*`` pass: not a last part)."""
_SESSION_KEYS = re.compile(r"BW_SESSION|OP_SESSION_[A-Z0-9_]+")
"""The Bitwarden CLI's and 1Password CLI's session keys (they unlock the vault): no word of the list."""
_NAME_PARTS = re.compile(r"[^A-Z0-9]+")
_NOT_SECRET_WORDS = re.compile(r"AUTHOR(?!I[TSZ])|COOKIECUTTER|TOKENIZER|KEYBOARD")
"""Words holding one of :data:`SECRET_NAME_WORDS` that say nothing secret, left out before the words
are looked for: git's ``GIT_AUTHOR_NAME`` and ``GIT_AUTHOR_EMAIL`` (``AUTH``: a kernel with the host's
env could not commit, and every output naming the author showed ``[REDACTED]``) and cookiecutter's
``COOKIECUTTER_CONFIG`` (``COOKIE``), Hugging Face's ``TOKENIZERS_PARALLELISM`` (``TOKEN``: set to
silence the tokenizers' fork warning, it never reached a kernel) and ``KEYBOARD``'s ``KEY``;
``AUTHORIZATION``, ``XAUTHORITY`` and a ``TOKENIZER_API_TOKEN`` still look secret."""

SAFE_NAME_PREFIXES = ("PATH", "HOME", "USER", "LANG", "LC_", "TERM", "TMPDIR", "TMP", "TEMP", "SHELL",
                      "LOGNAME", "XDG_", "PYTHONPATH", "VIRTUAL_ENV", "CONDA", "TZ", "PWD")


@dataclass(frozen=True)
class DecodedStream:
    """One stream of one cell, as the API hands it out."""

    text: str
    truncated: bool
    dropped_bytes: int


def decode_capture(head: bytes, tail: bytes, dropped: int, *, secrets: Iterable[str] = ()) -> DecodedStream:
    """Decode a head/tail capture into clean text.

    :param head: the first bytes of the stream, as captured.
    :param tail: the last bytes (empty unless the stream went over its cap).
    :param dropped: bytes the runner left out between head and tail.
    :param secrets: literal values to redact wherever they appear.
    :returns: the decoded, ANSI-stripped, redacted text with its truncation facts.
    """
    if dropped <= 0 and not tail:
        return DecodedStream(clean(head.decode("utf-8", "replace"), secrets), False, 0)
    if dropped <= 0:  # head full, tail holds the rest: contiguous
        return DecodedStream(clean((head + tail).decode("utf-8", "replace"), secrets), False, 0)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    head_text = decoder.decode(head, final=False)
    cut = len(decoder.getstate()[0])  # an incomplete character at the end of the head
    skip = 0
    while skip < min(3, len(tail)) and 0x80 <= tail[skip] <= 0xBF:
        skip += 1  # continuation bytes of a character that started in the dropped part
    dropped += cut + skip
    tail_text = tail[skip:].decode("utf-8", "replace")
    marker = f"\n[... {dropped} bytes dropped ...]\n"
    head_text, tail_text = clean_cut(head_text, tail_text, secrets)
    return DecodedStream(head_text + marker + tail_text, True, dropped)


#: The shortest piece of a secret literal masked at a truncation cut (:func:`clean_cut`).
MIN_CUT_PIECE = 4
_INLINE_MARKER = re.compile(r"\n\[\.\.\. \d+ characters dropped \.\.\.\]\n")


def clean_cut(head: str, tail: str, secrets: Iterable[str] = ()) -> tuple[str, str]:
    """:func:`clean` both sides of a truncation cut, and mask the piece of a secret literal (at least
    :data:`MIN_CUT_PIECE` characters) the cut left at the head's end or the tail's start: each side
    alone holds no whole value to redact (a secret printed across the cut showed all but its end).
    """
    head, tail = clean(head, secrets), clean(tail, secrets)
    for value in secrets:
        if len(value) < 8:
            continue
        for size in range(len(value) - 1, MIN_CUT_PIECE - 1, -1):
            if head.endswith(value[:size]):
                head = head[:-size] + REDACTED
                break
        for size in range(len(value) - 1, MIN_CUT_PIECE - 1, -1):
            if tail.startswith(value[-size:]):
                tail = REDACTED + tail[size:]
                break
    return head, tail


def clean_inline_cut(text: str, secrets: Iterable[str] = ()) -> str:
    """:func:`clean` a text the runner cut around an inline ``[... N characters dropped ...]``
    marker (an error's message or traceback), as :func:`clean_cut` does each side."""
    found = _INLINE_MARKER.search(text)
    if found is None:
        return clean(text, secrets)
    head, tail = clean_cut(text[:found.start()], text[found.end():], secrets)
    return head + found.group() + tail


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (CSI, OSC and two-byte escapes)."""
    return _ANSI.sub("", text) if ("\x1b" in text or "\x9b" in text) else text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask credentials: known token shapes, ``NAME=value`` assignments, URL passwords, literals.

    Linear and cheap on text without credentials: each pattern runs only when a literal that
    all its matches contain is in the text (a few C-level substring searches per call).
    """
    for value in secrets:
        if value and len(value) >= 8 and value in text:
            text = text.replace(value, REDACTED)
    for pattern, needles in _SECRET_PATTERNS:
        if any(n in text for n in needles):
            text = pattern.sub(REDACTED, text)
    lower = text.lower()
    if any(w in lower for w in _BEARER_WORDS):
        text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    if any(w in lower for w in _ASSIGN_WORDS):
        text = _ASSIGN.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}{m.group(3)}", text)
    return text


def clean(text: str, secrets: Iterable[str] = ()) -> str:
    """:func:`strip_ansi` then :func:`redact`."""
    if len(text) < 8:  # shorter than the 8-char literal minimum and every shape (a URL password: ``a://b:c@``)
        return strip_ansi(text)
    return redact(strip_ansi(text), secrets)


def is_secret_name(name: str) -> bool:
    """Whether a variable's name looks secret (:data:`SECRET_NAME_WORDS`, :data:`SECRET_NAME_PARTS`)."""
    upper = _NOT_SECRET_WORDS.sub("_", name.upper())
    if any(word in upper for word in SECRET_NAME_WORDS) or _SESSION_KEYS.fullmatch(upper):
        return True
    parts = _NAME_PARTS.split(upper)
    return len(parts) > 1 and (not SECRET_NAME_PARTS.isdisjoint(parts) or parts[-1] in SECRET_LAST_PARTS)


def scrub_env(env: Mapping[str, str], *, allow: Iterable[str] = (), extra: Mapping[str, str] | None = None,
              keep_all: bool = False) -> dict[str, str]:
    """The environment a kernel starts with.

    Drops every variable whose name looks secret (:data:`SECRET_NAME_WORDS`) or whose value holds
    a URL with a password (``DATABASE_URL=postgres://app:pw@db/app``) or a connection string's
    (``CONN_STR=Server=db;Password=pw;``, ODBC's ``PWD=pw``) and, unless
    ``keep_all``, every variable that is not on the safe list either. ``allow`` names pass as
    they are (the allow-list); ``extra`` is added last.
    """
    global _last_scrub
    allowed = set(allow)
    key = (tuple(env.items()), tuple(sorted(allowed)), keep_all)
    seen, kept = _last_scrub
    if seen != key:  # the same host environment for every kernel, mostly: scanned once (0.2 ms a start)
        kept = {}
        for name, value in env.items():
            if name in allowed:
                kept[name] = value
            elif is_secret_name(name) or url_passwords(value) or conn_passwords(value):
                continue
            elif keep_all or name.startswith(SAFE_NAME_PREFIXES):
                kept[name] = value
        _last_scrub = (key, kept)
    out = dict(kept)
    out.update(extra or {})
    return out


_last_scrub: tuple[Any, dict[str, str]] = (None, {})  # scrub_env's last (environment, allow, keep_all) and its result


def kernel_secrets(env: Mapping[str, str]) -> tuple[str, ...]:
    """The values redacted from a kernel's results: the host's secret-looking variables' and those
    of the kernel's own ``env``. The host's are found again only when ``os.environ`` changed (the
    scan is about 0.2 ms on a 35-variable environment, once per kernel started)."""
    global _host_secrets
    host, (seen, found) = tuple(os.environ.items()), _host_secrets
    if seen != host:
        found = secret_values()
        _host_secrets = (host, found)
    return found + (secret_values(env) if env else ())


_host_secrets: tuple[tuple[tuple[str, str], ...] | None, tuple[str, ...]] = (None, ())  # os.environ as last scanned, its secrets


def secret_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Values of the host's secret-looking variables, and the passwords of URLs in any variable's
    value (:func:`url_passwords`), redacted wherever a cell prints them."""
    env = os.environ if env is None else env
    found = [v for k, v in env.items() if is_secret_name(k)]
    found += [p for v in env.values() for p in (*url_passwords(v), *conn_passwords(v))]
    return tuple(dict.fromkeys(f for v in found for f in (v, *escaped_forms(v)) if len(f) >= 8))


def escaped_forms(value: str) -> list[str]:
    """``value`` as a ``repr`` or JSON writes it inside its quotes, where that differs: a secret
    holding a backslash or a newline showed whole in a cell's value (``'Zq\\\\9#kP2'``), a dict's
    repr, ``json.dumps`` output and a tool call's ``args``, none of which holds it literally."""
    forms = (repr(value)[1:-1], json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1])
    return [f for f in dict.fromkeys(forms) if f != value]


def url_passwords(value: str) -> list[str]:
    """The passwords of the URLs in ``value`` (each also percent-decoded, as ``urlparse`` users
    read it): a cell printed ``urlparse(os.environ['DATABASE_URL']).password`` whole."""
    if "://" not in value:
        return []
    found = [m.group(2) for m in _URL_PASSWORD.finditer(value)]
    return found + [d for d in map(unquote, found) if d not in found]


_CONN_PASSWORD = re.compile(r"(?i)(?:^|;)\s*(?:password|pwd)\s*=\s*(\"[^\"]*\"|'[^']*'|[^;]*)")


def conn_passwords(value: str) -> list[str]:
    """The passwords of a connection string in ``value`` (``Server=db;Password=pw;``, ODBC's
    ``PWD={pw}`` or ``PWD='pw'`` too): ``split('Password=')`` printed one whole from a kernel."""
    found = [m.group(1).strip() for m in _CONN_PASSWORD.finditer(value)]
    return [f[1:-1] if len(f) > 1 and f[0] + f[-1] in ("''", '""', "{}") else f for f in found if f]


def error_text(exc: BaseException) -> str:
    """``Name: message``, or ``Name`` alone for an error without a message (a Ctrl-C's
    ``KeyboardInterrupt``: a note and a story line ended in ``KeyboardInterrupt: ``)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
