"""`make demo`: Kafka in KRaft mode through a broker failure (demo_cluster.py).

`python -m kraftlog.demo [--secure] [cluster] [quorum] [log]` also runs the earlier
parts: the metadata quorum alone (demo_quorum.py) and the partition log
alone (below). `--secure` runs the cluster part on a secured cluster
(demo_secure.py); `kraftlog demo [--secure]` is the same. The log part writes a few thousand records with every compression codec, shuts down cleanly,
reopens (no recovery scan needed), looks records up by offset and by
timestamp, then shows a segment through `kraftlog dump-log`, as an operator
would inspect a Kafka segment with kafka-dump-log.
"""
from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kafka_protocol.compression import Codec

from . import demo_cluster, demo_quorum
from partition_log.config import LogConfig
from partition_log.log_manager import LogManager
from kafka_protocol.records import Record, encode_batch, iter_records

TOPIC, PARTITION = "demo-events", 0
BATCHES, PER_BATCH = 40, 100
WORDS = "kafka raft quorum broker segment index offset epoch replica leader follower".split()


def produce(manager: LogManager, console: Console, start_ms: int) -> list[tuple[int, bytes]]:
    log = manager.get_or_create(TOPIC, PARTITION)
    rng = random.Random(42)
    written = []
    codecs = list(Codec)
    for i in range(BATCHES):
        records = []
        for j in range(PER_BATCH):
            n = i * PER_BATCH + j
            value = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))).encode()
            records.append(Record(b"user-%d" % (n % 97), value, start_ms + n * 10, (("source", b"demo"),)))
        info = log.append_as_leader(encode_batch(records, codec=codecs[i % len(codecs)]), leader_epoch=i // 20)
        written += [(info.first_offset + k, r.value) for k, r in enumerate(records)]
    log.update_high_watermark(log.log_end_offset)
    console.print(f"wrote [bold]{len(written)}[/] records in {BATCHES} batches "
                  f"({', '.join(c.label for c in codecs)}) into {len(log.segments)} segments, "
                  f"{log.size_in_bytes:,} bytes")
    return written


PARTS = ("cluster", "quorum", "log")


def main(argv: list[str] | None = None) -> int:
    """`python -m kraftlog.demo [--secure] [cluster|quorum|log ...]`: the cluster demo by default."""
    args = argv if argv is not None else sys.argv[1:]
    secure = "--secure" in args
    parts = [a for a in args if a != "--secure"] or ["cluster"]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        print(f"unknown demo part {', '.join(unknown)}; choose from {', '.join(PARTS)}", file=sys.stderr)
        return 2
    console = Console()
    status = 0
    for part in parts:
        if part == "log":
            partition_log_demo(console)
        elif part == "quorum":
            status |= demo_quorum.main(console)
        else:
            status |= demo_cluster.main(console, secure=secure)
    return status


def partition_log_demo(console: Console) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="kraftlog-demo-"))
    try:
        config = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=1024)
        start_ms = time.time_ns() // 1_000_000 - 3_600_000
        console.rule("[bold]kraftlog partition log demo")
        console.print(f"log directory: {workdir}")
        manager = LogManager(workdir, config)
        written = produce(manager, console, start_ms)
        manager.close()
        console.print("clean shutdown: .kafka_cleanshutdown and offset checkpoints written")

        manager = LogManager(workdir, config)
        log = manager.logs[(TOPIC, PARTITION)]
        report = log.load_report
        console.print(f"reopened: log start {log.log_start_offset}, log end {log.log_end_offset}, "
                      f"segments recovered by scanning: {report.recovered_segments}")
        assert log.log_end_offset == len(written)

        table = Table(title="lookups")
        table.add_column("query")
        table.add_column("offset", justify="right")
        table.add_column("timestamp", justify="right")
        table.add_column("value")
        for offset in (0, 1234, len(written) - 1):
            record = next(r for r in iter_records(log.read(offset, 1)) if r.offset == offset)
            assert record.value == written[offset][1], "read back a different value"
            table.add_row(f"offset {offset}", str(record.offset), str(record.timestamp), record.value.decode())
        for delta_ms in (0, 25_005, 39_990):
            found = log.find_offset_by_timestamp(start_ms + delta_ms)
            assert found is not None
            record = next(r for r in iter_records(log.read(found[0], 1)) if r.offset == found[0])
            table.add_row(f"timestamp start+{delta_ms} ms", str(found[0]), str(found[1]), record.value.decode())
        console.print(table)

        all_offsets = [r.offset for data in log.iter_reads(log.log_start_offset, 1 << 20)
                       for r in iter_records(data)]
        console.print(f"full scan: {len(all_offsets)} records, offsets 0..{all_offsets[-1]}, "
                      f"in order and complete: {all_offsets == list(range(len(written)))}")
        segment = log.segments[1].log_path
        manager.close()

        console.rule(f"kraftlog dump-log {segment.name}")
        cli = Path(sys.executable).with_name("kraftlog")
        subprocess.run([str(cli), "dump-log", str(segment)], check=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
