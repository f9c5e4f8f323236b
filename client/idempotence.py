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
batch as out of order), the producer bumps its epoch as Kafka 3+ does
(KIP-360): it waits until nothing is in flight, asks InitProducerId with its
current id and epoch, and numbers the batches it still holds from 0 again,
in their original order (a batch stamped under an older epoch gets a new
sequence when it is next sent).
"""
from __future__ import annotations

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
        """Give a batch being sent its producer id, epoch and (first time only) its sequence."""
        if batch.base_sequence == NO_SEQUENCE or batch.producer_epoch != self.producer_epoch \
                or batch.producer_id != self.producer_id:
            seq = self._next_sequence.get(batch.tp, 0)
            batch.producer_id = self.producer_id
            batch.producer_epoch = self.producer_epoch
            batch.base_sequence = seq
            self._next_sequence[batch.tp] = (seq + batch.record_count) % SEQUENCE_MODULUS
        # else a retry keeps its sequence
        batch.next_when_sent = self.is_next_expected(batch)

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
