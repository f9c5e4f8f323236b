"""A read_committed consumer's filter of one fetch answer: which batches of
aborted transactions to drop (Kafka's CompletedFetch, KIP-98).

A read_committed fetch reads up to the last stable offset and lists the
aborted transactions whose records may be among those read: (producer id,
first offset). Walking the batches in offset order, a producer becomes
"aborted" once a batch reaching an aborted transaction's first offset is
met; its transactional batches are dropped until its ABORT marker, which
ends the aborted transaction. Control batches (COMMIT/ABORT markers) are
never records for the application. A producer's committed transactions are
not listed, so their batches pass. No I/O: the fetcher calls `keep()` per
batch; a reader that decodes records its own way (the columnar
decode) calls `keep_header()` with the batch header alone.
"""
from __future__ import annotations

import heapq
from typing import Iterable

from kafka_protocol.batch import NO_PRODUCER_ID, BatchHeader
from kafka_protocol.control_records import ControlType, control_type
from kafka_protocol.records import DecodedBatch


class AbortedTransactions:
    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        """`aborted`: (producer_id, first_offset) of the answer's aborted transactions."""
        self._pending = [(first_offset, producer_id) for producer_id, first_offset in aborted]
        heapq.heapify(self._pending)
        self._aborting: set[int] = set()  # producers whose aborted transaction has begun and not ended

    def _reach(self, header: BatchHeader) -> None:
        """Every aborted transaction starting at or before this batch's last offset has begun."""
        pending = self._pending
        while pending and pending[0][0] <= header.last_offset:
            self._aborting.add(heapq.heappop(pending)[1])

    def keep(self, batch: DecodedBatch) -> bool:
        """Whether the batch's records go to the application (a control batch never does)."""
        h = batch.header
        abort_marker = h.is_control and bool(batch.records) and control_type(batch.records[0][0]) == ControlType.ABORT
        return self.keep_header(h, abort_marker)

    def keep_header(self, h: BatchHeader, abort_marker: bool) -> bool:
        """keep() from the header and whether the batch is an ABORT marker; batches in offset order."""
        if h.producer_id == NO_PRODUCER_ID or not h.is_transactional:
            return not h.is_control
        self._reach(h)
        if h.is_control:
            if abort_marker:
                self._aborting.discard(h.producer_id)
            return False
        return h.producer_id not in self._aborting


__all__ = ["AbortedTransactions"]
