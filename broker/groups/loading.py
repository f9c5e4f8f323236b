"""Loading a __consumer_offsets partition: its batches replayed into a
GroupMachine in log order, as Kafka's coordinator loader does.

- A plain batch: each record replayed.
- A transactional data batch: its offset records become pending under the
  batch's producer id (the rest applies at once, state.py).
- A COMMIT/ABORT control batch (decode_txn_marker): that producer's pending
  offsets committed or dropped, at the marker's place in the log.
- Other control batches are skipped. A record or marker that does not decode
  is logged and skipped: one bad record does not keep a coordinator down.
"""
from __future__ import annotations

import logging

from kafka_protocol.batch import iter_headers
from kafka_protocol.control_records import decode_txn_marker
from kafka_protocol.errors import KafkaError
from kafka_protocol.records import decode_batch
from kafka_protocol.schema_types import SchemaError

from .machine import GroupMachine
from .records import TopicIds, decode_record
from .state import NO_PRODUCER_ID

log = logging.getLogger(__name__)


def replay_batches(machine: GroupMachine, data: bytes | memoryview, ids: TopicIds, where: str = "") -> int:
    """Replay concatenated batches (a read of the log); the number of records
    and markers applied. `where` names the partition in warnings."""
    count = 0
    for pos, header in iter_headers(data):
        if header.is_control:
            try:
                marker = decode_txn_marker(data[pos:pos + header.size])
            except KafkaError as exc:
                log.warning("%s offset %d: skipping an undecodable control batch: %s", where, header.base_offset, exc)
                continue
            if marker is not None:
                machine.complete_txn(header.producer_id, marker.committed)
                count += 1
            continue
        producer_id = header.producer_id if header.is_transactional else NO_PRODUCER_ID
        for record in decode_batch(data, pos, verify_crc=False).records:
            try:
                decoded = decode_record(record.key, record.value, ids)
            except SchemaError as exc:
                log.warning("%s offset %d: skipping an undecodable record: %s", where, record.offset, exc)
                continue
            if decoded is not None:
                machine.replay(decoded, producer_id)
                count += 1
    return count
