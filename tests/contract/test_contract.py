"""The backend contract suite (pytest_hermes_kernel.contract), run on every transport of the matrix."""

from pytest_hermes_kernel.contract import *  # noqa: F401,F403
