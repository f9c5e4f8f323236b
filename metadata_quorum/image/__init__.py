"""The metadata image every controller and broker replays the metadata log into."""

from .model import (
    BrokerRegistration,
    Endpoint,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
    PartitionState,
    TopicImage,
    decision_entry,
)

__all__ = [
    "BrokerRegistration",
    "Endpoint",
    "MetadataDelta",
    "MetadataImage",
    "MetadataReplayError",
    "PartitionState",
    "TopicImage",
    "decision_entry",
]
