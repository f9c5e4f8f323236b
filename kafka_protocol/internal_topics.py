"""Kafka's internal topic names, in one place for the controller, the broker,
the partition log directory and the CLI.

- `__cluster_metadata` is not a topic at all: it is the metadata quorum's
  Raft log (`<metadata.log.dir>/__cluster_metadata-0`). No request may
  create, delete, grow, produce to or fetch it as a partition; a broker
  never opens it as one.
- `__consumer_offsets` (and the transaction log a later issue adds) are
  real topics the brokers create and write themselves. Clients may read
  them but not create, delete, grow or produce to them.
"""
from __future__ import annotations

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"

# Topics the brokers keep for themselves (Kafka's Topic.isInternal).
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC})
# Names no topic may have: the metadata log lives under this one.
RESERVED_TOPIC_NAMES = frozenset({CLUSTER_METADATA_TOPIC})


def is_internal(topic: str) -> bool:
    """A topic only the brokers create and write (Kafka's Topic.isInternal)."""
    return topic in INTERNAL_TOPICS


def is_reserved(topic: str) -> bool:
    """A name that is never a topic: the metadata quorum's own log."""
    return topic in RESERVED_TOPIC_NAMES


def is_client_forbidden(topic: str) -> bool:
    """A client request may not create, delete, grow or produce to this topic."""
    return topic in INTERNAL_TOPICS or topic in RESERVED_TOPIC_NAMES
