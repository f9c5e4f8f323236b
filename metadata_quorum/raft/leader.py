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

Voter changes (KIP-853): AddVoter, RemoveVoter and UpdateVoter append a
VotersRecord with the new set, which is in force at once (for the high
watermark and check-quorum too). One change at a time, as KIP-853's
single-server changes are safe only so: a change is refused while the last
VotersRecord is uncommitted, and before this leader has committed an entry
of its own epoch (so no voter change of an older epoch can still be
pending). A replica is added only when it already fetches as an observer and
has caught up. The request is answered when the record commits. A leader
that removed itself keeps leading until then, without counting itself, and
resigns (core._settle).
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
    AddVoterRequest,
    RemoveVoterRequest,
    UpdateVoterRequest,
    VoterChangeResponse,
)
from .states import NEVER, ElectionState
from .voters import ReplicaKey, Voter, VoterSet

if TYPE_CHECKING:
    from .core import RaftCore


class _Replica:
    __slots__ = ("replica_id", "directory_id", "end_offset", "last_fetch", "last_caught_up", "last_contact")

    def __init__(self, replica_id: int, now: int, directory_id: Optional[str] = None) -> None:
        self.replica_id = replica_id
        self.directory_id = directory_id
        self.end_offset = -1
        self.last_fetch = -1
        self.last_caught_up = -1
        # For check-quorum: a new leader gives every voter a full fetch timeout.
        self.last_contact = now

    def describe(self) -> ReplicaState:
        return ReplicaState(self.replica_id, self.end_offset, self.last_fetch, self.last_caught_up, self.directory_id)


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
        "fetch_timeout_ms",
        "voter_set",
        "voter_change",
        "needed",
    )
    name = "Leader"

    def __init__(self, epoch: int) -> None:
        super().__init__(epoch)
        self.high_watermark: Optional[int] = None
        self.parked: dict[int, tuple[FetchRequest, int]] = {}
        self.accumulator: list[bytes] = []
        self.linger_deadline: float = NEVER
        # The voter change in flight: (request, offset of its record, deadline).
        self.voter_change: Optional[tuple[AddVoterRequest | RemoveVoterRequest | UpdateVoterRequest, int, float]] = None

    def leader_id(self) -> Optional[int]:
        return self.node_id

    def has_live_leader(self, core: "RaftCore") -> bool:
        return True  # we are it: refuse pre-votes until we resign

    def on_enter(self, core: "RaftCore") -> None:
        now = core.now
        self.node_id = core.node_id
        self.fetch_timeout_ms = core.config.fetch_timeout_ms
        # Voters other than this node; the leader's own offset is core.flushed_end.
        self.voter_set = core.voter_set
        self.needed = self._needed(core)
        self.voter_states = {
            v: _Replica(v, now, core.voter_set.key_of(v).directory_id) for v in core.other_voters  # type: ignore[union-attr]
        }
        self.observer_states: dict[ReplicaKey, _Replica] = {}
        self.epoch_start_offset = core.log.end_offset
        entries = [leader_change_record(core.node_id, self.epoch, core.voters)]
        if core.dynamic and not core.voters_in_log():
            # The set came from the bootstrap checkpoint: write it into the log
            # as Kafka's first leader does, so new nodes learn it. First, so
            # that every snapshot (which ends after an entry) carries it.
            entries.insert(0, core.voters_entry(core.voter_set))
        core.append_as_leader(entries)
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
                    voter_directory_id=core.voter_set.key_of(voter).directory_id  # type: ignore[union-attr]
                    if voter in core.voters
                    else None,
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
        if self.voter_change is not None and now >= self.voter_change[2]:
            req = self.voter_change[0]
            self.voter_change = None
            # The record stays in the log and may still commit; the caller asks again.
            core.reply(req, Errors.REQUEST_TIMED_OUT, "the new voter set did not commit in time")
        if now >= self._check_quorum_deadline():
            core.quorum.become_resigned(self.preferred_successors())
            return
        if now >= self.begin_resend_at:
            self._send_begin_epoch(core)

    @staticmethod
    def _needed(core: "RaftCore") -> int:
        """How many other voters make a majority with the leader. The leader is
        one of it if it is a voter (a leader that removed itself is not, until
        it resigns)."""
        return core.majority - (1 if core.in_voters else 0)

    def _check_quorum_deadline(self) -> float:
        """When the leader must resign unless more voters fetch first (check-quorum)."""
        needed = self.needed
        if needed <= 0 or not self.voter_states:
            return NEVER
        contacts = sorted((r.last_contact for r in self.voter_states.values()), reverse=True)
        if needed > len(contacts):
            return NEVER  # cannot happen with a majority of a non-empty set; never resign on it
        return contacts[needed - 1] + self.fetch_timeout_ms

    def next_deadline(self) -> float:
        d = min(self.linger_deadline, self.begin_resend_at, self._check_quorum_deadline())
        if self.voter_change is not None and self.voter_change[2] < d:
            d = self.voter_change[2]
        for _, deadline in self.parked.values():
            if deadline < d:
                d = deadline
        return d

    def preferred_successors(self) -> tuple[int, ...]:
        ranked = sorted(list(self.voter_states.values()), key=lambda r: (-r.end_offset, r.replica_id))
        return tuple(r.replica_id for r in ranked)

    # --- high watermark ---------------------------------------------------

    def update_high_watermark(self, core: "RaftCore") -> None:
        self.sync_voters(core)
        offsets = [r.end_offset for r in list(self.voter_states.values())]
        if core.in_voters:
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
        if self.voter_change is not None and candidate > self.voter_change[1]:
            req = self.voter_change[0]
            self.voter_change = None
            core.reply(req, Errors.NONE)
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
        key = ReplicaKey(replica_id, req.replica_directory_id)
        replica = self.voter_states.get(replica_id)
        if replica is not None and not core.voter_set.has_key(key):
            replica = None  # the voter's id on another directory (a reformatted disk): an observer
        is_voter = replica is not None
        if replica is None:
            replica = self.observer_states.get(key)
            if replica is None:
                replica = self.observer_states[key] = _Replica(replica_id, core.now, key.directory_id)
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
        if replica is not None and core.voter_set.has_key(ReplicaKey(req.replica_id, req.replica_directory_id)):
            replica.last_contact = core.now
        snapshot = core.snapshot
        if req.max_bytes <= 0:
            core.reply(req, Errors.INVALID_REQUEST)
            return
        if snapshot is None or snapshot.snapshot_id != req.snapshot_id:
            core.reply(req, Errors.SNAPSHOT_NOT_FOUND)
            return
        data = core.snapshot_payload()
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
        self.sync_voters(core)
        me = ReplicaState(core.node_id, core.log.end_offset, core.now, core.now, core.directory_id)
        voters = [r.describe() for r in list(self.voter_states.values())]
        observers = [r.describe() for r in self.observer_states.values()]
        (voters if core.in_voters else observers).append(me)
        voters.sort(key=lambda r: r.replica_id)
        observers.sort(key=lambda r: (r.replica_id, r.directory_id or ""))
        hw = -1 if self.high_watermark is None else self.high_watermark
        return QuorumInfo(core.node_id, self.epoch, hw, tuple(voters), tuple(observers))

    # --- the voter set (KIP-853) ----------------------------------------------

    def sync_voters(self, core: "RaftCore") -> None:
        """Track the voters of the set in force: a new voter keeps what it
        showed as an observer; a removed one is an observer from now on."""
        if core.voter_set is self.voter_set:
            return
        self.voter_set = voter_set = core.voter_set
        self.needed = self._needed(core)
        for node_id in list(self.voter_states):
            key = voter_set.key_of(node_id)
            replica = self.voter_states[node_id]
            if node_id == core.node_id or key is None or key.directory_id != replica.directory_id:
                del self.voter_states[node_id]
                self.parked.pop(node_id, None)
                self.unacked.discard(node_id)
                self.observer_states[ReplicaKey(node_id, replica.directory_id)] = replica
        for node_id in core.other_voters:
            if node_id not in self.voter_states:
                key = voter_set.key_of(node_id)
                assert key is not None
                replica = self.observer_states.pop(key, None) or self.observer_states.pop(ReplicaKey(node_id), None)
                if replica is None:
                    replica = _Replica(node_id, core.now, key.directory_id)
                replica.directory_id = key.directory_id
                # check-quorum gives a new voter a full fetch timeout, as at an epoch's start
                replica.last_contact = core.now
                self.voter_states[node_id] = replica

    def must_resign(self, core: "RaftCore") -> bool:
        """A leader that removed itself steps down once that removal commits."""
        return (
            not core.in_voters
            and self.high_watermark is not None
            and self.high_watermark > core.last_voters_offset()
        )

    def on_voter_change(self, core: "RaftCore", req: AddVoterRequest | RemoveVoterRequest | UpdateVoterRequest) -> None:
        error, message, new_set = self._judge_voter_change(core, req)
        if error is not Errors.NONE:
            core.reply(req, error, message)
            return
        assert new_set is not None
        self._drain(core)  # records accepted before the change go first
        offset = core.log.end_offset
        core.append_as_leader([core.voters_entry(new_set)])
        self.sync_voters(core)
        timeout = getattr(req, "timeout_ms", 0) or core.config.request_timeout_ms
        self.voter_change = (req, offset, core.now + timeout)
        self._complete_parked(core, expired_only=False)
        self.update_high_watermark(core)  # a smaller majority may commit at once

    def _judge_voter_change(
        self, core: "RaftCore", req: AddVoterRequest | RemoveVoterRequest | UpdateVoterRequest
    ) -> tuple[Errors, str, Optional[VoterSet]]:
        """(NONE, "", the new voter set), or the error that refuses the change."""
        if not core.dynamic:
            return Errors.UNSUPPORTED_VERSION, "the quorum's voters are static (controller.quorum.voters)", None
        if self.high_watermark is None:
            return Errors.REQUEST_TIMED_OUT, "the leader has not committed an entry of its epoch yet", None
        if self.voter_change is not None or core.last_voters_offset() >= self.high_watermark:
            return Errors.REQUEST_TIMED_OUT, "another voter change is not committed yet", None
        voters = core.voter_set
        if isinstance(req, RemoveVoterRequest):
            key = req.voter
            if not voters.has_key(key) or key.directory_id is None:
                return Errors.VOTER_NOT_FOUND, f"{key} is not a voter", None
            if len(voters) == 1:
                return Errors.INVALID_REQUEST, "the last voter cannot be removed", None
            return Errors.NONE, "", voters.removed(key.id)
        voter: Voter = req.voter
        key = voter.key
        if key.id < 0 or key.directory_id is None:
            return Errors.INVALID_REQUEST, "a voter needs a node id and a directory id", None
        if isinstance(req, UpdateVoterRequest):
            if not voters.has_key(key):
                return Errors.VOTER_NOT_FOUND, f"{key} is not a voter", None
            return Errors.NONE, "", voters.updated(voter)
        if key.id in voters.ids:
            return Errors.DUPLICATE_VOTER, f"node {key.id} is already a voter", None
        replica = self.observer_states.get(key)
        if (
            replica is None
            or replica.end_offset < self.high_watermark
            or replica.last_fetch < core.now - self.fetch_timeout_ms
        ):
            return Errors.REQUEST_TIMED_OUT, f"{key} is not a caught-up observer of this leader", None
        return Errors.NONE, "", voters.added(voter)

    def on_exit(self, core: "RaftCore") -> None:
        if self.voter_change is not None:
            req = self.voter_change[0]
            self.voter_change = None
            core.send(
                VoterChangeResponse(
                    src=core.node_id,
                    dst=req.src,
                    correlation_id=req.correlation_id,
                    error=Errors.NOT_LEADER_OR_FOLLOWER,
                    epoch=self.epoch,
                    leader_id=None,
                    error_message="the leader stepped down before the change committed",
                )
            )
