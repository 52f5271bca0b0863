"""A host variable holding a URL with a password (``DATABASE_URL``) reached every kernel.

Its name looks like no secret, so ``DATABASE_URL=postgres://app:PASSWORD@db/app`` passed into
each kernel's environment; the URL printed whole came back redacted, but the password alone,
``urlparse(os.environ['DATABASE_URL']).password``, printed as it is. A host variable whose value
holds a URL with a password is dropped now (``env_allow=["DATABASE_URL"]`` passes it), and the
password of a URL in the host's or the kernel's own variables is redacted wherever a cell prints
it, percent-encoded or not.
"""

from __future__ import annotations

from pytest_hermes_kernel.kernel.output import REDACTED, scrub_env, secret_values

PASSWORD = "db-url-canary-pw-%40-61"
URL = f"postgres://app:{PASSWORD}@db.example:5432/app"
PASSWORD_CELL = "import os, urllib.parse\nprint(urllib.parse.urlparse(os.environ[%r]).password)"


def test_a_variable_holding_a_url_password_is_dropped_and_its_password_is_a_secret():
    env = {"DATABASE_URL": URL, "SERVICE_URL": "https://svc.example/x", "PATH": "/bin"}
    assert set(scrub_env(env, keep_all=True)) == {"SERVICE_URL", "PATH"}
    assert set(scrub_env(env, keep_all=True, allow=["DATABASE_URL"])) == {"DATABASE_URL", "SERVICE_URL", "PATH"}
    assert set(secret_values(env)) == {PASSWORD, "db-url-canary-pw-@-61"}


def test_a_host_url_password_never_reaches_a_kernel(hermes_kernel_factory, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", URL)

    default = hermes_kernel_factory().execute("import os\nprint(os.environ.get('DATABASE_URL'))")
    allowed = hermes_kernel_factory(env_allow=["DATABASE_URL"]).execute(PASSWORD_CELL % "DATABASE_URL")

    assert default.stdout == "None\n", default.stdout
    assert allowed.stdout == f"{REDACTED}\n", allowed.stdout


def test_the_password_of_a_url_in_the_kernels_env_is_redacted(hermes_kernel_factory):
    k = hermes_kernel_factory(env={"CACHE_URL": "redis://:cache-canary-pw-62@cache:6379/0"})

    r = k.execute(PASSWORD_CELL % "CACHE_URL")

    assert r.stdout == f"{REDACTED}\n", r.stdout
