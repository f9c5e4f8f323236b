"""Deterministic simulator for the Raft core: virtual time, one seeded RNG, faults, invariants."""

from .checker import InvariantChecker, InvariantViolation
from .cluster import SimCluster, SimNode
from .schedule import ScheduleResult, run_schedule

__all__ = ["InvariantChecker", "InvariantViolation", "ScheduleResult", "SimCluster", "SimNode", "run_schedule"]
