"""--hermes-keep-failed keeps at most --hermes-keep-failed-max kernels a pytest process (default 10):
a CI job with the keep switch on in its environment and 200 failing tests kept 200 kernels (about
12 MB of memory each on local) for the TTL, an hour by default. The failed tests' kernels past the
cap are shut down, each named in the summary with why; nothing of them is left."""

from __future__ import annotations

import pytest

from tests.plugin.test_keep_failed import kept_env, records  # noqa: F401  (kept_env is a fixture)

MANY_FAILING = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_fails(hermes_kernel, i):
    hermes_kernel.execute("evidence = {{i}}".format(i=i))
    assert False, "deliberate failure"
"""


@pytest.mark.parametrize(("n", "args", "kept"), [(11, [], 10), (3, ["--hermes-keep-failed-max=1"], 1),
                                                 (3, ["--hermes-keep-failed-max=none"], 3)],
                         ids=["default-10", "max-1", "no-cap"])
def test_a_process_keeps_at_most_its_cap_and_ends_the_rest(pytester, run, kept_env, n, args, kept):  # noqa: F811
    pytester.makepyfile(test_many=MANY_FAILING.format(n=n))

    result = run("--hermes-keep-failed", "--hermes-leak-check=error", "--tb=no", *args)

    result.assert_outcomes(failed=n)  # no LeakError: the kernels past the cap were shut down
    out = result.stdout.str()
    assert out.count("kept for post-mortem: ") == kept, out
    assert len(records(kept_env)) == kept
    cap = args[0].split("=")[1] if args else "10"
    not_kept = f"not kept: this process keeps at most {cap} (--hermes-keep-failed-max): shut down"
    assert out.count(not_kept) == n - kept, out
    if n > kept:
        result.stdout.fnmatch_lines([f"test_many.py::test_fails[[]local-{kept}[]]: kernel * {not_kept}"])


def test_a_cap_that_is_no_positive_integer_is_a_usage_error(pytester, run):
    pytester.makepyfile(test_many=MANY_FAILING.format(n=1))

    result = run("--hermes-keep-failed", "--hermes-keep-failed-max=0")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad value '0' from --hermes-keep-failed-max: expected an integer >= 1, "
                                 "or none for no cap, not '0'*"])
