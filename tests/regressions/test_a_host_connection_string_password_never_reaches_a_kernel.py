"""A host variable holding a connection string with a password reached every kernel.

``CONN_STR="Server=db;User Id=app;Password=PW;"`` (ADO.NET's form; ODBC writes ``PWD=PW``) has a
name that looks like no secret and a value that is no URL, so it passed into each kernel's
environment. The string printed whole came back ``Password=[REDACTED]``, but the password alone,
``os.environ['CONN_STR'].split('Password=')[1]``, printed as it is (``pw-conn-canary-63;``). Such a
variable is dropped now, as one holding a URL with a password is (``env_allow`` passes it), and
its password is a secret value, redacted wherever a cell prints it.
"""

from __future__ import annotations

from pytest_hermes_kernel.kernel.output import REDACTED, scrub_env, secret_values

PASSWORD = "pw-conn-canary-63"
ADO = f"Server=db.example;User Id=app;Password={PASSWORD};"
ODBC = "DRIVER={ODBC Driver 18};SERVER=db;UID=app;PWD='odbc-canary-pw-64'"
PASSWORD_CELL = "import os\nprint(os.environ[%r].split('Password=')[1].rstrip(';'))"


def test_a_variable_holding_a_connection_string_password_is_dropped_and_its_password_is_a_secret():
    env = {"CONN_STR": ADO, "ODBC_CONN": ODBC, "OTHER": "Server=db;Database=app;", "PATH": "/bin"}
    assert set(scrub_env(env, keep_all=True)) == {"OTHER", "PATH"}
    assert set(scrub_env(env, keep_all=True, allow=["CONN_STR"])) == {"CONN_STR", "OTHER", "PATH"}
    assert set(secret_values(env)) == {PASSWORD, "odbc-canary-pw-64"}


def test_a_host_connection_string_password_never_reaches_a_kernel(hermes_kernel_factory, monkeypatch):
    monkeypatch.setenv("CONN_STR", ADO)

    default = hermes_kernel_factory().execute("import os\nprint(os.environ.get('CONN_STR'))")
    allowed = hermes_kernel_factory(env_allow=["CONN_STR"]).execute(PASSWORD_CELL % "CONN_STR")

    assert default.stdout == "None\n", default.stdout
    assert allowed.stdout == f"{REDACTED}\n", allowed.stdout
