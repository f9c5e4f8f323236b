"""The metadata image every controller and broker replays the metadata log into."""

from .model import (
    BrokerRegistration,
    Endpoint,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
    PartitionState,
    TopicImage,
)

__all__ = [
    "BrokerRegistration",
    "Endpoint",
    "MetadataDelta",
    "MetadataImage",
    "MetadataReplayError",
    "PartitionState",
    "TopicImage",
]
