"""The active controller: every metadata decision, as a pure, deterministic state machine.

`Controller` turns broker and admin requests into metadata records plus
responses (`ControllerResult`); the gRPC and Raft shell around it appends
the records and answers once they commit.
"""

from .assignment import PlacementBroker, place_replicas, validate_assignments
from .controller_config import ControllerConfig, validate_topic_config, validate_topic_configs
from .elections import NO_LEADER, Election, elect_leader, live_brokers, preferred_leader, without_brokers
from .errors import ControllerError, Error
from .heartbeats import BrokerHeartbeats
from .quorum_controller import PRODUCER_ID_BLOCK_SIZE, Controller, error_response
from .result import ControllerResult

__all__ = [
    "NO_LEADER",
    "PRODUCER_ID_BLOCK_SIZE",
    "BrokerHeartbeats",
    "Controller",
    "ControllerConfig",
    "ControllerError",
    "ControllerResult",
    "Election",
    "Error",
    "PlacementBroker",
    "elect_leader",
    "error_response",
    "live_brokers",
    "place_replicas",
    "preferred_leader",
    "validate_assignments",
    "validate_topic_config",
    "validate_topic_configs",
    "without_brokers",
]
