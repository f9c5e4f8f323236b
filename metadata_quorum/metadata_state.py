"""MetadataStateMachine: the metadata image as the state machine above the quorum.

Every controller and every broker runs one: committed records are replayed
into the MetadataImage in log order, each run's MetadataDelta goes to the
listeners (a broker starts or stops leading partitions from it), and the
quorum's snapshots are snapshots of the image. A record that does not
replay (MetadataReplayError) means the log is corrupt: it propagates and
the node stops rather than serve a wrong image.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable, Optional

from .image import MetadataDelta, MetadataImage

log = logging.getLogger(__name__)

DeltaListener = Callable[[MetadataImage, MetadataDelta], None]


class MetadataStateMachine:
    def __init__(self) -> None:
        self.image = MetadataImage()
        self._listeners: list[DeltaListener] = []
        # The last committed offset applied, control entries (leader changes,
        # voter sets) included: the image's own offset stops at the last
        # metadata record, so after a leader change it would never reach the
        # high watermark. What a node reports as how far it has applied the
        # log (Kafka's loader advances over control batches the same way).
        self.committed_offset = -1

    def add_listener(self, listener: DeltaListener) -> None:
        """Called after every applied run with the image and what changed (never with an empty delta)."""
        self._listeners.append(listener)

    def apply(self, records: Iterable[tuple[int, bytes]]) -> None:
        delta = MetadataDelta()
        image = self.image
        for offset, data in records:
            image.apply_bytes(data, offset, delta)
        if not delta.is_empty():
            for listener in self._listeners:
                listener(image, delta)

    def committed_through(self, offset: int) -> None:
        """Everything up to `offset` is committed and applied (called by the quorum node)."""
        self.committed_offset = max(self.committed_offset, offset)

    @property
    def applied_offset(self) -> int:
        """How far this node has applied the metadata log: the last record, or a later control entry."""
        return max(self.image.offset, self.committed_offset)

    def snapshot(self) -> bytes:
        return self.image.snapshot()

    def load_snapshot(self, data: Optional[bytes]) -> None:
        self.image = MetadataImage() if data is None else MetadataImage.from_snapshot(data)
        log.info("metadata image loaded at offset %d: %d brokers, %d topics",
                 self.image.offset, len(self.image.brokers), len(self.image.topics))
        everything = MetadataDelta()
        everything.changed_brokers.update(self.image.brokers)
        everything.created_topics.update(self.image.topics)
        for topic_id, topic in self.image.topics.items():
            everything.changed_partitions.update((topic_id, p) for p in topic.partitions)
        everything.changed_acls.update(self.image.acls)
        everything.changed_scram_credentials.update(self.image.scram_credentials)
        everything.changed_client_quotas.update(self.image.client_quotas)
        if not everything.is_empty():
            for listener in self._listeners:
                listener(self.image, everything)
