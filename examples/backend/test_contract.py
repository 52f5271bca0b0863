"""The backend contract suite against the example backend (see conftest.py): one import line."""

from pytest_hermes_kernel.contract import *  # noqa: F401,F403
