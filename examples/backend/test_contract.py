"""The backend contract suite, in one import."""

from pytest_hermes_kernel.contract import *  # noqa: F401,F403
