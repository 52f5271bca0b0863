"""Host variables whose names only hold a secret word inside an ordinary one were taken for secrets.

``GIT_AUTHOR_NAME`` and ``GIT_AUTHOR_EMAIL`` hold ``AUTH`` (in ``AUTHOR``), and cookiecutter's
``COOKIECUTTER_CONFIG`` holds ``COOKIE`` (a word since 36d9dc5), Hugging Face's
``TOKENIZERS_PARALLELISM`` holds ``TOKEN`` and a ``*_KEYBOARD_*`` setting ``KEY``: each was dropped from a kernel
that inherits the host's env (``inherit_env=True``: a cell's ``git commit`` had no author), and
its value was a secret value redacted from every output: a cell printing the author's name got
``[REDACTED]``. They pass now, and are no secret values; names that hold the word for itself
(``AUTHORIZATION``, ``XAUTHORITY``, ``SSH_AUTH_SOCK``, ``SESSION_COOKIE``) still look secret.
"""

from __future__ import annotations

import ast

from pytest_hermes_kernel.kernel.output import is_secret_name, scrub_env, secret_values

ORDINARY = {"GIT_AUTHOR_NAME": "Jane Q. Developer", "GIT_AUTHOR_EMAIL": "jane.developer@example.org",
            "COOKIECUTTER_CONFIG": "/home/jane/.cookiecutterrc", "TOKENIZERS_PARALLELISM": "false",
            "XKB_DEFAULT_KEYBOARD_LAYOUT": "us-intl-dead-keys"}
STILL_SECRET = ["HTTP_AUTHORIZATION", "PROXY_AUTHORISATION", "XAUTHORITY", "SSH_AUTH_SOCK", "SESSION_COOKIE",
                "BASIC_AUTH", "AUTHOR_API_KEY", "COOKIECUTTER_TOKEN", "OAUTH_CLIENT",
                "TOKENIZER_API_TOKEN", "KEYBOARD_KEY"]


def test_the_names_look_ordinary_and_the_secret_ones_still_secret() -> None:
    assert [name for name in ORDINARY if is_secret_name(name)] == []
    assert [name for name in STILL_SECRET if not is_secret_name(name)] == []
    assert scrub_env(ORDINARY, keep_all=True) == ORDINARY
    assert secret_values(ORDINARY) == ()


def test_a_kernel_with_the_hosts_env_gets_them_and_prints_them_whole(hermes_kernel_factory, monkeypatch) -> None:
    for name, value in ORDINARY.items():
        monkeypatch.setenv(name, value)
    k = hermes_kernel_factory(inherit_env=True)  # started after the host has them

    seen = k.execute("import os\nprint({n: os.environ.get(n) for n in %r})" % sorted(ORDINARY))

    assert seen.status == "ok", seen.summary()
    assert ast.literal_eval(seen.stdout) == ORDINARY, seen.stdout
