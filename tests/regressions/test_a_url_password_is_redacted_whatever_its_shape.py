"""A URL's password printed by a cell came back whole when the URL had no user name.

Redaction masks ``scheme://user:password@host``, but a Redis URL's usual shape,
``redis://:password@cache:6379/0`` (a password and no user), was left alone: a cell that
printed its connection URL showed the password. A password holding an ``@`` that the URL did
not percent-encode (``postgres://app:p@ssw0rd@db/app``, which drivers accept) lost only its first
piece (``app:[REDACTED]@ssw0rd@db``).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.kernel.output import REDACTED, redact

URLS = {"redis://:r3dis-canary-pw@cache:6379/0": f"redis://:{REDACTED}@cache:6379/0",
        "postgres://app:p@ssw0rd-canary@db:5432/app": f"postgres://app:{REDACTED}@db:5432/app",
        "amqp://guest:amqp-canary-pw@rabbit//": f"amqp://guest:{REDACTED}@rabbit//"}


@pytest.mark.parametrize("url", sorted(URLS))
def test_a_url_password_is_masked(url):
    assert redact(f"connecting to {url} now") == f"connecting to {URLS[url]} now"


@pytest.mark.parametrize("text", ["https://host:8080/p@x", "http://user@host/", "see http://a.b:80/x and foo@bar",
                                  "ssh://git@github.com:22/org/repo",
                                  # a URL with a port beside an e-mail address in compact JSON: the text
                                  # between them (8080","mail":"a) was taken for a password (kf's review)
                                  '{"url":"http://h:8080","mail":"a@b.org"}', "<http://h:8080>,<a@b.org>"])
def test_a_url_without_a_password_is_kept(text):
    assert redact(text) == text


def test_a_cell_printing_its_urls_shows_no_password(hermes_kernel):
    r = hermes_kernel.execute("for url in %r:\n    print(url)" % sorted(URLS))

    assert r.stdout.splitlines() == [URLS[url] for url in sorted(URLS)], r.stdout
