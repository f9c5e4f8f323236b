"""Deterministic simulation of the active controller with simulated brokers.

One seed -> one reproducible run. A `Controller` decides over a
`MetadataImage`; every result's records are appended to a simulated log
(offsets in order) and replayed into the image at once, as the shell does.
Brokers register, heartbeat (and lose heartbeats), fall behind on the
metadata log, crash and restart as new incarnations, shut down in a
controlled way, send late requests from an old incarnation, and, as
partition leaders, shrink and expand their ISRs from a possibly stale view
of the metadata. An operator creates and deletes topics, adds partitions,
sets topics' min.insync.replicas, and asks for preferred and unclean elections; the active controller
sometimes fails over (its soft state is lost). After the chaos everything
heals, and every broker must be unfenced and every partition led again.

The invariants, checked at every step, are listed in `checker.py`.

    python -m metadata_quorum.sim.controller_sim --schedules 300 --seed 0
    python -m metadata_quorum.sim.controller_sim --schedules 1 --seed 17 --verbose
"""

from .bugs import BUGS
from .checker import ControllerChecker, InvariantViolation
from .schedule import ControllerScheduleResult, ControllerSim, run_controller_schedule

__all__ = [
    "BUGS",
    "ControllerChecker",
    "ControllerScheduleResult",
    "ControllerSim",
    "InvariantViolation",
    "run_controller_schedule",
]
