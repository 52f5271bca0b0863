"""Seen: ``start_kernel(..., cwd="")`` ran the cells in the kernel's own kernel dir and
``python=""`` on the transport's interpreter, as if neither was given (a ``cwd=$WORKDIR`` with
the variable unset ran somewhere else, silently), and ``max_output_bytes=2048.5`` was taken as a
size in bytes.

Now each is a :class:`ConfigError` naming the option, before anything starts.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError, start_kernel
from pytest_hermes_kernel.kernel.options import KernelOptions


@pytest.mark.parametrize("option, value, says", [("cwd", "", "non-empty path"), ("python", "", "non-empty path"),
                                                 ("oom_counter_file", "", "non-empty path"),
                                                 ("max_output_bytes", 2048.5, "an int"),
                                                 ("max_output_bytes", 4096.0, "an int")])
def test_an_option_that_says_nothing_is_refused(option, value, says):
    with pytest.raises(ConfigError, match=f"{option} must be .*{says}"):
        KernelOptions(**{option: value})
    with pytest.raises(ConfigError, match=option):
        start_kernel("local", **{option: value})
