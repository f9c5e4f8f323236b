"""The leader: serves Fetch, tracks replicas, moves the high watermark, checks its quorum.

Replication is pull-based (KIP-595): voters and observers send Fetch with
the offset they hold and the epoch of their last entry; the leader answers
with records, or with a diverging epoch when their log went another way, or
with a snapshot id when they are behind the log start. A Fetch with nothing
new to return is parked (long poll) until data arrives, the high watermark
moves, or its max wait expires on a tick.

The high watermark is the largest offset that a majority of voters holds,
counting the leader's own flushed log end offset, provided it covers an
entry of the current epoch (the leader-change record appended on election
makes that happen quickly). Observers never count. It never goes back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    Entry,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    QuorumInfo,
    ReplicaState,
)
from .states import NEVER, ElectionState

if TYPE_CHECKING:
    from .core import RaftCore


class _Replica:
    __slots__ = ("replica_id", "end_offset", "last_fetch", "last_caught_up", "last_contact")

    def __init__(self, replica_id: int, now: int) -> None:
        self.replica_id = replica_id
        self.end_offset = -1
        self.last_fetch = -1
        self.last_caught_up = -1
        # For check-quorum: a new leader gives every voter a full fetch timeout.
        self.last_contact = now

    def describe(self) -> ReplicaState:
        return ReplicaState(self.replica_id, self.end_offset, self.last_fetch, self.last_caught_up)


def leader_change_record(leader_id: int, epoch: int, voters: frozenset[int]) -> Entry:
    data = f"LeaderChange(leader={leader_id},epoch={epoch},voters={','.join(map(str, sorted(voters)))})"
    return Entry(epoch, data.encode(), control=True)


class Leader(ElectionState):
    __slots__ = (
        "epoch_start_offset",
        "high_watermark",
        "voter_states",
        "observer_states",
        "parked",
        "accumulator",
        "linger_deadline",
        "unacked",
        "begin_resend_at",
        "node_id",
        "majority",
        "fetch_timeout_ms",
    )
    name = "Leader"

    def __init__(self, epoch: int) -> None:
        super().__init__(epoch)
        self.high_watermark: Optional[int] = None
        self.parked: dict[int, tuple[FetchRequest, int]] = {}
        self.accumulator: list[bytes] = []
        self.linger_deadline: float = NEVER

    def leader_id(self) -> Optional[int]:
        return self.node_id

    def has_live_leader(self, core: "RaftCore") -> bool:
        return True  # we are it: refuse pre-votes until we resign

    def on_enter(self, core: "RaftCore") -> None:
        now = core.now
        self.node_id = core.node_id
        self.majority = core.majority
        self.fetch_timeout_ms = core.config.fetch_timeout_ms
        # Voters other than this node; the leader's own offset is core.flushed_end.
        self.voter_states = {v: _Replica(v, now) for v in core.other_voters}
        self.observer_states: dict[int, _Replica] = {}
        self.epoch_start_offset = core.log.end_offset
        core.append_as_leader([leader_change_record(core.node_id, self.epoch, core.voters)])
        self.unacked = set(core.other_voters)
        self._send_begin_epoch(core)
        self.update_high_watermark(core)

    def _send_begin_epoch(self, core: "RaftCore") -> None:
        for voter in sorted(self.unacked):
            core.send(
                BeginQuorumEpochRequest(
                    src=core.node_id,
                    dst=voter,
                    correlation_id=core.next_correlation_id(),
                    cluster_id=core.cluster_id,
                    leader_epoch=self.epoch,
                    leader_id=core.node_id,
                )
            )
        self.begin_resend_at = core.now + core.config.request_timeout_ms if self.unacked else NEVER

    # --- appends ----------------------------------------------------------

    def append(self, core: "RaftCore", records: list[bytes]) -> int:
        self.accumulator.extend(records)
        last_offset = core.log.end_offset + len(self.accumulator) - 1
        if (
            core.config.append_linger_ms == 0
            or len(self.accumulator) >= core.config.append_max_batch_records
            or self._idle(core)
        ):
            self._drain(core)
        elif self.linger_deadline == NEVER:
            self.linger_deadline = core.now + core.config.append_linger_ms
        return last_offset

    def _idle(self, core: "RaftCore") -> bool:
        """Everything written before is flushed and committed: nothing to batch with.

        Lingering then would only add latency (linger.ms exists to batch
        appends that arrive while earlier ones are still on their way).
        """
        end = core.log.end_offset
        return core.flushed_end >= end and self.high_watermark is not None and self.high_watermark >= end

    def _drain(self, core: "RaftCore") -> None:
        records, self.accumulator = self.accumulator, []
        self.linger_deadline = NEVER
        if records:
            core.append_as_leader([Entry(self.epoch, r) for r in records])
            self._complete_parked(core, expired_only=False)

    # --- timers -----------------------------------------------------------

    def tick(self, core: "RaftCore") -> None:
        now = core.now
        if now >= self.linger_deadline:
            self._drain(core)
        if self.parked:
            self._complete_parked(core, expired_only=True)
        if now >= self._check_quorum_deadline():
            core.quorum.become_resigned(self.preferred_successors())
            return
        if now >= self.begin_resend_at:
            self._send_begin_epoch(core)

    def _check_quorum_deadline(self) -> float:
        """When the leader must resign unless more voters fetch first (check-quorum)."""
        if not self.voter_states:
            return NEVER
        contacts = sorted((r.last_contact for r in self.voter_states.values()), reverse=True)
        # The leader itself is one of the majority; it needs majority-1 others.
        return contacts[self.majority - 2] + self.fetch_timeout_ms

    def next_deadline(self) -> float:
        d = min(self.linger_deadline, self.begin_resend_at, self._check_quorum_deadline())
        for _, deadline in self.parked.values():
            if deadline < d:
                d = deadline
        return d

    def preferred_successors(self) -> tuple[int, ...]:
        ranked = sorted(list(self.voter_states.values()), key=lambda r: (-r.end_offset, r.replica_id))
        return tuple(r.replica_id for r in ranked)

    # --- high watermark ---------------------------------------------------

    def update_high_watermark(self, core: "RaftCore") -> None:
        offsets = [r.end_offset for r in list(self.voter_states.values())]
        offsets.append(core.flushed_end)
        offsets.sort(reverse=True)
        candidate = offsets[core.majority - 1]
        if candidate <= self.epoch_start_offset:
            return  # nothing of this epoch is on a majority yet
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return
        assert candidate <= core.log.end_offset
        self.high_watermark = candidate
        core.learn_high_watermark(candidate)
        if self.accumulator and self._idle(core):
            self._drain(core)  # the batch in flight committed: write what waited for it
        self._complete_parked(core, expired_only=False)

    def on_flushed(self, core: "RaftCore") -> None:
        self.update_high_watermark(core)

    # --- Fetch --------------------------------------------------------------

    def on_fetch_request(self, core: "RaftCore", req: FetchRequest) -> None:
        log = core.log
        offset, last_epoch = req.fetch_offset, req.last_fetched_epoch
        if offset < 0 or last_epoch < 0 or last_epoch > self.epoch or (offset == 0) != (last_epoch == 0):
            core.reply(req, Errors.INVALID_REQUEST)
            return
        if last_epoch == self.epoch and offset > log.end_offset:
            # Nobody can hold more of this epoch than its leader.
            core.reply(req, Errors.OFFSET_OUT_OF_RANGE)
            return
        replica_id = req.replica_id
        replica = self.voter_states.get(replica_id)
        is_voter = replica is not None
        if replica is None:
            replica = self.observer_states.get(replica_id)
            if replica is None:
                replica = self.observer_states[replica_id] = _Replica(replica_id, core.now)
        else:
            replica.last_contact = core.now
            self.unacked.discard(replica_id)

        if offset < log.start_offset:
            self._reply_snapshot(core, req)
            return
        found = log.end_offset_for_epoch(last_epoch)
        if found is None:
            self._reply_snapshot(core, req)
            return
        if found.epoch != last_epoch or offset > found.end_offset:
            core.send(self._response(core, req, diverging_epoch=found))
            return

        # The fetcher's log matches ours up to `offset`, and it holds that durably.
        replica.end_offset = offset
        replica.last_fetch = core.now
        if offset >= log.end_offset:
            replica.last_caught_up = core.now
        if is_voter:
            self.update_high_watermark(core)
        if offset < log.end_offset or req.max_wait_ms <= 0:
            core.send(self._records_response(core, req))
        else:
            # A newer fetch from the same replica supersedes a parked one.
            self.parked[replica_id] = (req, core.now + req.max_wait_ms)

    def _response(self, core: "RaftCore", req: FetchRequest, **fields: object) -> FetchResponse:
        return FetchResponse(
            **core.envelope(req),  # type: ignore[arg-type]
            high_watermark=self.high_watermark,
            log_start_offset=core.log.start_offset,
            base_offset=req.fetch_offset,
            **fields,  # type: ignore[arg-type]
        )

    def _records_response(self, core: "RaftCore", req: FetchRequest) -> FetchResponse:
        log = core.log
        records = ()
        if req.fetch_offset < log.end_offset:
            records = log.entries_from(req.fetch_offset, core.config.fetch_max_bytes)
        return self._response(core, req, records=records)

    def _reply_snapshot(self, core: "RaftCore", req: FetchRequest) -> None:
        assert core.snapshot is not None, "log starts above 0 only after a snapshot"
        core.send(self._response(core, req, snapshot_id=core.snapshot.snapshot_id))

    def _complete_parked(self, core: "RaftCore", expired_only: bool) -> None:
        now = core.now
        for replica_id, (req, deadline) in list(self.parked.items()):
            if expired_only and deadline > now:
                continue
            del self.parked[replica_id]
            if req.fetch_offset < core.log.start_offset:
                self._reply_snapshot(core, req)
            else:
                core.send(self._records_response(core, req))

    # --- FetchSnapshot --------------------------------------------------------

    def on_fetch_snapshot_request(self, core: "RaftCore", req: FetchSnapshotRequest) -> None:
        replica = self.voter_states.get(req.replica_id)
        if replica is not None:
            replica.last_contact = core.now
        snapshot = core.snapshot
        if req.max_bytes <= 0:
            core.reply(req, Errors.INVALID_REQUEST)
            return
        if snapshot is None or snapshot.snapshot_id != req.snapshot_id:
            core.reply(req, Errors.SNAPSHOT_NOT_FOUND)
            return
        data = snapshot.data
        if req.position < 0 or req.position > len(data):
            core.reply(req, Errors.POSITION_OUT_OF_RANGE)
            return
        size = min(req.max_bytes, core.config.fetch_snapshot_max_bytes)
        core.send(
            FetchSnapshotResponse(
                **core.envelope(req),  # type: ignore[arg-type]
                snapshot_id=snapshot.snapshot_id,
                size=len(data),
                position=req.position,
                chunk=data[req.position : req.position + size],
            )
        )

    def on_begin_quorum_epoch_response(self, core: "RaftCore", resp: BeginQuorumEpochResponse) -> None:
        if resp.error is Errors.NONE and resp.epoch == self.epoch:
            self.unacked.discard(resp.src)

    # --- DescribeQuorum -----------------------------------------------------

    def describe(self, core: "RaftCore") -> QuorumInfo:
        me = ReplicaState(core.node_id, core.log.end_offset, core.now, core.now)
        voters = sorted([me] + [r.describe() for r in list(self.voter_states.values())], key=lambda r: r.replica_id)
        observers = sorted((r.describe() for r in self.observer_states.values()), key=lambda r: r.replica_id)
        hw = -1 if self.high_watermark is None else self.high_watermark
        return QuorumInfo(core.node_id, self.epoch, hw, tuple(voters), tuple(observers))
