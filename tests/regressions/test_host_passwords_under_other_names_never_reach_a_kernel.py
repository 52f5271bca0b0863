"""Host variables that hold a password under a name the word list missed reached every kernel.

The kernel's environment drops a host variable whose name looks secret (``KEY``, ``TOKEN``,
``PASSWORD``, ...), but ``MYSQL_PWD`` (the mysql client's password variable), ``DB_PASS``,
``SMTP_PASS``, ``GPG_PASSPHRASE`` and sshpass's ``SSHPASS`` passed: a cell's
``print(os.environ['MYSQL_PWD'])`` printed the password whole (it was no secret value to redact
either). They are dropped now, and redacted where a cell prints them; the shell's ``PWD`` and
``OLDPWD``, ``BYPASS`` and ``COMPASS_DIR`` still pass. So are ``REDIS_PW``, a GitLab job's OIDC
token ``CI_JOB_JWT`` (a cloud credential) and a ``SESSION_COOKIE``, which passed too (Playwright's
``PW_TEST_*`` settings still pass).
"""

from __future__ import annotations

import ast

from pytest_hermes_kernel.kernel.output import REDACTED, is_secret_name, scrub_env, secret_values

PASSWORDS = {"MYSQL_PWD": "mysql-pwd-canary-41", "DB_PASS": "db-pass-canary-42", "SMTP_PASS": "smtp-canary-43",
             "GPG_PASSPHRASE": "gpg-canary-phrase-44", "SSHPASS": "sshpass-canary-45"}
PLAIN = {"PWD": "/srv/app", "OLDPWD": "/srv", "BYPASS": "1", "COMPASS_DIR": "/opt/compass",
         "PW_TEST_HTML_REPORT_OPEN": "never"}
MORE = {"REDIS_PW": "redis-pw-canary-46", "CI_JOB_JWT": "eyJ-jwt-canary-47", "SESSION_COOKIE": "cookie-canary-48"}


def test_password_names_look_secret_and_the_shells_names_do_not():
    assert [name for name in PASSWORDS if not is_secret_name(name)] == []
    assert [name for name in PLAIN if is_secret_name(name)] == []
    assert set(scrub_env({**PASSWORDS, **PLAIN}, keep_all=True)) == set(PLAIN)
    assert set(secret_values(PASSWORDS)) == set(PASSWORDS.values())


def test_a_jwt_a_cookie_and_a_pw_look_secret_too():
    assert [name for name in MORE if not is_secret_name(name)] == []
    assert set(scrub_env({**MORE, **PLAIN}, keep_all=True)) == set(PLAIN)


def test_a_host_password_under_another_name_never_reaches_a_kernel(hermes_kernel_factory, monkeypatch):
    for name, value in PASSWORDS.items():
        monkeypatch.setenv(name, value)
    k = hermes_kernel_factory()  # started after the host has them

    seen = k.execute("import os\nprint({n: os.environ.get(n) for n in %r})" % sorted(PASSWORDS))
    through_a_tool = hermes_kernel_factory(tools={"peek": lambda: PASSWORDS["MYSQL_PWD"]}).execute(
        "import hermes_tools\nprint(hermes_tools.peek())")

    assert seen.status == "ok", seen.summary()
    assert ast.literal_eval(seen.stdout) == dict.fromkeys(PASSWORDS), seen.stdout
    assert through_a_tool.stdout == f"{REDACTED}\n", "a host password a tool handed over is printed redacted"
