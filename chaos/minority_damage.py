"""A minority's copy damaged: one follower's segment bit-flipped or cut short.

Issue 22's "a minority's segment truncated or a bit flipped (that replica
never leads with a shorter or corrupt log)". One fault, `follower-bitflip`
or `follower-truncate`, on partition 0 of the workload's topic:

1. a follower of the partition (a replica that is not its leader) is stopped:
   killed (SIGKILL, an unclean shutdown: its restart recovers the log from
   the recovery point) or, in the `-clean` scenario, stopped (SIGTERM: a
   controlled shutdown that writes `.kafka_cleanshutdown`, so nothing is
   recovered at the restart);
2. its copy of the partition's last non-empty segment is damaged, with the
   node down: `flip_batch_byte` inverts one byte of a stored batch's records
   (past the 61-byte header, so inside the CRC-covered part; the offsets and
   lengths a loader reads stay as they were), `cut_segment` cuts the file
   back by whole batches or into the middle of one;
3. it is started again, and at once the partition's leader is killed, so an
   election happens while the damaged replica rejoins (the undo restarts the
   leader); the scenario's own `kill` faults make more.

A damage waits (Nemesis, bounded) until the partition is led with every
replica in its ISR: the copies an earlier damage cut have fetched their
writes again, so the damaged replicas are a minority at any time.

What was damaged (file, position, batch offset; bytes and offsets cut) goes
into the history with the fault. What must hold: nothing acknowledged is
lost, no read ever meets a batch whose CRC fails (the workload's consumers
check every batch's CRC: client/fetcher.py decodes with verify_crc; each
such failed read is counted, `corrupt_reads` in the summary), and the
damaged replica never leads with a shorter or corrupt log (it would lose
acknowledged writes or serve the corrupt batch).
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, Sequence

from kafka_protocol import batch as b
from partition_log import disk_faults as df

MINORITY_FAULTS = ("follower-bitflip", "follower-truncate")
MINORITY_SCENARIOS = {"minority-damage": "kill", "minority-damage-clean": "stop"}  # scenario -> how F stops
STOP_TIMEOUT_S = 30.0  # a controlled shutdown longer than this ends in SIGKILL (LocalCluster.stop)
MAX_BATCHES_CUT = 4
CORRUPT = "CorruptRecordError"  # what the workload's client raises at a batch whose CRC fails


class FollowerCluster(Protocol):
    def kill(self, node_id: int) -> None: ...
    def stop(self, node_id: int, timeout: Optional[float] = None) -> int: ...
    def start(self, *node_ids: int) -> None: ...


def segment_batches(path: Path) -> list[tuple[int, b.BatchHeader]]:
    """(position, header) of each whole batch of a segment file, in order;
    stops at a batch the file does not hold whole."""
    data = Path(path).read_bytes()
    found, pos = [], 0
    while pos + b.HEADER_SIZE <= len(data):
        h = b.parse_header(data, pos)
        if h.batch_length < b.MIN_BATCH_LENGTH or pos + h.size > len(data):
            break
        found.append((pos, h))
        pos += h.size
    return found


def last_segment(partition_dir: Path) -> Optional[Path]:
    """The partition's newest `.log` file holding a batch (the active one, or
    the last sealed one when a roll just left the active one empty)."""
    logs = sorted(Path(partition_dir).glob("*.log"), reverse=True)
    return next((p for p in logs if segment_batches(p)), None)


def flip_batch_byte(path: Path, rng: random.Random) -> dict[str, Any]:
    """Invert one byte of a batch's records (CRC-covered, past the header); what was hit."""
    batches = [(pos, h) for pos, h in segment_batches(path) if h.size > b.HEADER_SIZE]
    if not batches:
        raise ValueError(f"{path} holds no batch with records")
    pos, h = rng.choice(batches)
    position = pos + rng.randrange(b.HEADER_SIZE, h.size)
    value = df.flip_byte(path, position)
    return {"file": str(path), "position": position, "batch_offset": h.base_offset,
            "batch_last_offset": h.last_offset, "batch_position": pos, "value": value}


def cut_segment(path: Path, rng: random.Random) -> dict[str, Any]:
    """Cut the file back: by 1-4 whole batches, or into the middle of one of
    them (a torn batch left at the end); what went."""
    batches = segment_batches(path)
    if not batches:
        raise ValueError(f"{path} holds no batch")
    before = os.stat(path).st_size
    count = rng.randint(1, min(MAX_BATCHES_CUT, len(batches)))
    pos, h = batches[-count]
    mid_batch = rng.random() < 0.5
    after = pos + rng.randrange(1, h.size) if mid_batch else pos
    os.truncate(path, after)
    return {"file": str(path), "size_before": before, "size_after": after, "bytes_cut": before - after,
            "batches_cut": count, "mid_batch": mid_batch, "first_offset_cut": h.base_offset,
            "last_offset_cut": batches[-1][1].last_offset}


@dataclass
class FollowerDamage:
    cluster: FollowerCluster
    brokers: Sequence[int]
    partition_dir: Callable[[int], Path]  # broker id -> its folder of the damaged partition
    stop_mode: str = "kill"  # "kill" (SIGKILL) or "stop" (SIGTERM, a clean shutdown)
    isr: Callable[[], Optional[list[int]]] = lambda: None  # the partition's ISR now (None: unknown)

    def inflict(self, kind: str, rng: random.Random, leader: int) -> tuple[dict[str, Any], Callable[[], None]]:
        """Stop a follower of `leader`'s partition, damage its copy, start it,
        and kill the leader; the undo starts the leader again."""
        if kind not in MINORITY_FAULTS:
            raise ValueError(f"unknown follower damage {kind!r}")
        follower = rng.choice(sorted(b for b in self.brokers if b != leader))
        if self.stop_mode == "kill":
            self.cluster.kill(follower)
            stopped: dict[str, Any] = {"stop": "kill"}
        else:
            stopped = {"stop": "stop", "exit_status": self.cluster.stop(follower, STOP_TIMEOUT_S)}
        segment = last_segment(self.partition_dir(follower))
        if segment is None:
            damage: dict[str, Any] = {"damaged": False, "reason": "no batch stored yet"}
        else:
            damage = {"damaged": True, **(flip_batch_byte(segment, rng) if kind == "follower-bitflip"
                                          else cut_segment(segment, rng))}
        self.cluster.start(follower)
        self.cluster.kill(leader)  # an election while the damaged replica rejoins
        details = {"nodes": [follower, leader], "follower": follower, "leader": leader, **stopped, **damage}
        return details, lambda: self.cluster.start(leader)


def corrupt_reads(history: Sequence[dict[str, Any]]) -> int:
    """Reads (polls, final reads) that met a batch whose CRC failed."""
    return sum(1 for line in history if line["f"] in ("poll", "final-read") and line["type"] in ("fail", "info")
               and CORRUPT in str(line.get("error", "")))
