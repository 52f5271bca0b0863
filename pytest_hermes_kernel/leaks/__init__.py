"""Leak probes and the checker that compares snapshots taken around a test."""

from .checker import LeakChecker, LeakReport
from .probes import PROBES, Probe, register_probe

__all__ = ["LeakChecker", "LeakReport", "PROBES", "Probe", "register_probe"]
