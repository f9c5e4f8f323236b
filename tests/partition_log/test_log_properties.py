"""Model-based property test: the log against a plain list of records, through
appends (leader and follower), truncations, retention, reopen and crashes."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from partition_log.config import LogConfig
from partition_log.log import Log
from kafka_protocol.records import Record, encode_batch, iter_records

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=128, segment_index_bytes=240, retention_bytes=1500)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name) / "model-0"
        self.log = Log(self.dir, CONFIG)
        self.model: list[tuple[int, bytes]] = []  # (offset, value) of every readable record
        self.start = 0
        self.end = 0

    def teardown(self) -> None:
        self.tmp.cleanup()

    @rule(values=st.lists(st.binary(max_size=60), min_size=1, max_size=8),
          codec=st.sampled_from(list(Codec)), epoch=st.integers(0, 3))
    def append(self, values, codec, epoch):
        epoch = max(epoch, self.log.leader_epochs.latest_epoch)
        data = encode_batch([Record(None, v, 1_000 + i) for i, v in enumerate(values)], codec=codec)
        info = self.log.append_as_leader(data, epoch)
        assert info.first_offset == self.end
        self.model += [(self.end + i, v) for i, v in enumerate(values)]
        self.end += len(values)

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def truncate(self, data):
        target = data.draw(st.integers(self.start, self.end))
        new_end = self.log.truncate_to(target)
        assert new_end <= target or target >= self.end
        self.end = new_end
        self.model = [(o, v) for o, v in self.model if o < new_end]

    @rule()
    def retention(self):
        self.log.update_high_watermark(self.end)
        self.log.delete_old_segments()
        self.start = self.log.log_start_offset
        self.model = [(o, v) for o, v in self.model if o >= self.start]

    @rule()
    def clean_reopen(self):
        self.log.close()
        self.log = Log(self.dir, CONFIG, recovery_point=self.end, log_start_offset=self.start, clean_shutdown=True)

    @rule(tail=st.integers(0, 40))
    def crash_reopen(self, tail):
        """kill -9 after an fsync, with some garbage past the end of the file."""
        self.log.flush()
        path = self.log.active_segment.log_path
        for seg in self.log.segments:
            seg.close()
        with open(path, "ab") as f:
            f.write(os.urandom(tail))
        self.log = Log(self.dir, CONFIG, log_start_offset=self.start)
        assert self.log.log_end_offset == self.end  # flushed data is never lost

    @invariant()
    def reads_match_the_model(self):
        assert self.log.log_end_offset == self.end
        assert self.log.log_start_offset == self.start
        got = []
        offset = self.start
        while offset < self.end:
            data = self.log.read(offset, 400)
            assert data, f"no data at {offset} below end {self.end}"
            got += [(r.offset, r.value) for r in iter_records(data) if r.offset >= offset]
            offset = b.end_offset(data)
        assert got == self.model


LogMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
TestLogAgainstModel = LogMachine.TestCase
