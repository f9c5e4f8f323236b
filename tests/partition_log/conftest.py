"""Helpers shared by the partition log tests: batches, a controllable clock."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafka_protocol.compression import Codec
from partition_log.config import LogConfig
from partition_log.log import Log
from kafka_protocol.records import Record, encode_batch, iter_records


class FakeClock:
    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def batch_of(values: list[bytes], *, ts: int = 1_700_000_000_000, keys: list[bytes] | None = None,
             codec: Codec = Codec.NONE) -> bytes:
    keys = keys or [None] * len(values)
    return encode_batch([Record(k, v, ts + i) for i, (k, v) in enumerate(zip(keys, values))], codec=codec)


def read_all(log: Log, start: int | None = None, max_offset: int | None = None) -> list[Record]:
    """Every record from `start` to the end, following segment boundaries."""
    offset = log.log_start_offset if start is None else start
    return [r for data in log.iter_reads(offset, 1 << 20, max_offset=max_offset)
            for r in iter_records(data) if r.offset >= offset]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "orders-0"


@pytest.fixture
def small_config() -> LogConfig:
    """Small segments and a dense index so tests cross every boundary."""
    return LogConfig(segment_bytes=4096, index_interval_bytes=256, segment_index_bytes=4096)


@pytest.fixture
def make_batch():
    return batch_of


@pytest.fixture
def read_log():
    return read_all
