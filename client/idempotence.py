"""An idempotent producer's side of the protocol (no I/O here).

The broker gives the producer an id and epoch (InitProducerId). Every batch
carries them and the sequence number of its first record, counted per
partition from 0 and wrapping at 2^31; the broker appends a batch only if
its sequence follows the last one it appended for that producer and
partition, answers a repeat of one of the last five as a duplicate, and
refuses a gap with OUT_OF_ORDER_SEQUENCE_NUMBER. Retries are therefore safe.

When the sequence state of the producer and the broker can no longer be
reconciled (a batch with a sequence failed for good, the broker lost the
producer's state: UNKNOWN_PRODUCER_ID, or refused the very next expected
batch as out of order), the producer bumps its epoch as Kafka's Java
producer does (KIP-360): by itself, with no request (a new id from
InitProducerId only once the epoch is exhausted), and numbers batches from 0
again under the new epoch.

A batch keeps the id, epoch and sequence it was first sent with for as long
as its outcome is unknown: only then does the broker know a retry for what
it is (a duplicate answered with the original offsets), whatever happened to
the other batches. So the bump waits until every batch ever sent is either
finished or known not written - refused for its sequence
(OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID), as Kafka's producer
waits for a partition's in-flight batches before it rewrites sequences; the
sender keeps retrying the unknown ones under their old stamp meanwhile (and
sends nothing new). A batch still unknown when delivery.timeout.ms ends
fails with a timeout (outcome unknown to the application), never
renumbered. Only refused batches get a new sequence after the bump, in
their original order.
"""
from __future__ import annotations

from typing import Iterable

from kafka_protocol.batch import NO_PRODUCER_ID, NO_SEQUENCE

from .producer_batch import ProducerBatch

SEQUENCE_MODULUS = 2**31


class IdempotenceState:
    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self.bump_needed = False
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._last_acked: dict[tuple[str, int], int] = {}
        # Sent, unfinished batches the broker refused for their sequence on their
        # last attempt: known not written, so the only ones a new epoch may renumber.
        self._refused: set[ProducerBatch] = set()

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    def set_producer(self, producer_id: int, producer_epoch: int) -> None:
        """A new id or epoch from InitProducerId: sequences start again from 0."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.bump_needed = False
        self._next_sequence.clear()
        self._last_acked.clear()

    def stamp(self, batch: ProducerBatch) -> None:
        """Give a batch being sent its producer id, epoch and sequence: the first
        time, or after a new epoch if the broker refused it (known not written).
        Any other retry keeps the stamp it was sent with, so that the broker can
        recognise it (a sent batch of unknown outcome is never renumbered)."""
        if batch.base_sequence == NO_SEQUENCE or batch in self._refused and (
                batch.producer_epoch != self.producer_epoch or batch.producer_id != self.producer_id):
            seq = self._next_sequence.get(batch.tp, 0)
            batch.producer_id = self.producer_id
            batch.producer_epoch = self.producer_epoch
            batch.base_sequence = seq
            self._next_sequence[batch.tp] = (seq + batch.record_count) % SEQUENCE_MODULUS
        self._refused.discard(batch)  # this attempt's outcome is unknown until answered
        batch.next_when_sent = self.is_next_expected(batch)

    def refused(self, batch: ProducerBatch) -> None:
        """The broker answered OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID:
        this attempt was not appended (and no earlier one was, or the broker would
        have taken this one for a duplicate)."""
        self._refused.add(batch)

    def forget(self, batch: ProducerBatch) -> None:
        """The batch is finished (acknowledged or failed for good)."""
        self._refused.discard(batch)

    def unsettled_partitions(self, queued: Iterable[ProducerBatch]) -> set[tuple[str, int]]:
        """Partitions of the queued batches that were sent and whose outcome is
        unknown: they must be retried under their stamp (and answered or expire)
        before a new epoch may start."""
        return {b.tp for b in queued if b.base_sequence != NO_SEQUENCE and b not in self._refused}

    def earlier_batch_may_explain(self, batch: ProducerBatch) -> bool:
        """OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID for a batch means
        the broker lost or never had our state only if every batch before it
        was acknowledged when it was sent. Otherwise it may simply have arrived
        before a predecessor still on its way (gRPC streams of one connection
        are not answered in order), or after one that failed: a retry in order
        settles it."""
        return not batch.next_when_sent

    def acknowledged(self, batch: ProducerBatch) -> None:
        if batch.producer_epoch == self.producer_epoch and batch.producer_id == self.producer_id:
            self._last_acked[batch.tp] = (batch.base_sequence + batch.record_count - 1) % SEQUENCE_MODULUS

    def is_next_expected(self, batch: ProducerBatch) -> bool:
        """The batch follows the last acknowledged one of its partition (so no
        earlier batch of ours can explain an OUT_OF_ORDER_SEQUENCE_NUMBER)."""
        last = self._last_acked.get(batch.tp, -1)
        return batch.producer_epoch == self.producer_epoch and \
            batch.base_sequence == (last + 1) % SEQUENCE_MODULUS

    def request_epoch_bump(self) -> None:
        self.bump_needed = True
