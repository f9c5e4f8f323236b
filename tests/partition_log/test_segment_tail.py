"""LogSegment's tail of recent batch positions (translate_offset's shortcut
for fetches at the log end) answers exactly as the walk from the index does,
after appends, a truncation and a recovery."""
from __future__ import annotations

import random

from kafka_protocol import batch as b
from kafka_protocol.records import Record, encode_batch
from partition_log.segment import TAIL_BATCHES, BatchPosition, LogSegment


def walked(segment: LogSegment, offset: int, start_position: int = 0):
    """translate_offset without the tail: the index lookup, then header by header."""
    tail, segment._tail = segment._tail, type(segment._tail)(maxlen=TAIL_BATCHES)
    try:
        return segment.translate_offset(offset, start_position)
    finally:
        segment._tail = tail


def append_batches(segment: LogSegment, next_offset: int, rng: random.Random, count: int) -> int:
    for _ in range(count):
        data = encode_batch([Record(None, bytes(rng.randrange(1, 300)), 0) for _ in range(rng.randrange(1, 4))],
                            base_offset=next_offset)
        h = b.parse_header(data)
        segment.append([data], len(data), [BatchPosition(0, h)])
        next_offset = h.next_offset + rng.choice((0, 0, 0, 5))  # now and then a gap, as after compaction
    return next_offset


def same_answers(segment: LogSegment, end: int) -> None:
    positions = [0] + [bp.position for bp in segment.iter_batch_positions()]
    for offset in range(0, end + 3):
        for start in (0, positions[len(positions) // 2], positions[-1]):
            assert segment.translate_offset(offset, start) == walked(segment, offset, start), (offset, start)


def test_the_tail_answers_as_the_index_walk(tmp_path) -> None:
    rng = random.Random(7)
    segment = LogSegment(tmp_path, 0, index_interval_bytes=512, max_index_bytes=1 << 16, created_ms=0)
    segment.create()
    try:
        end = append_batches(segment, 0, rng, 2 * TAIL_BATCHES)  # more than the tail keeps
        assert len(segment._tail) == TAIL_BATCHES
        same_answers(segment, end)

        cut = segment.translate_offset(end // 2).header.base_offset
        segment.truncate_to(cut)
        assert not segment._tail  # forgotten with what it described
        end = append_batches(segment, cut, rng, 5)
        assert len(segment._tail) == 5
        same_answers(segment, end)

        segment.recover(1 << 20)
        assert len(segment._tail) == TAIL_BATCHES
        same_answers(segment, end)
    finally:
        segment.close()
