"""RaftCore: the KRaft quorum protocol as a pure state machine.

Inputs: `step(message, now)` for every message received, `tick(now)` when
time passes (call it at `next_deadline()` at the latest), `append(records)`
on the leader, `advance(flushed_end)` when the shell's fsync completes, and
`create_snapshot(...)` from the state machine. Output: `ready()` returns a
`Ready` bundle of things to persist, send and apply, in a documented order
(ready.py). Time is whatever `now` (ms) the caller passes; randomness comes
from the `random.Random` passed in. Nothing in here blocks, sleeps, reads a
clock or touches a file, so the same code runs under the gRPC shell and
under the deterministic simulator.

This class holds what every state shares: the log, the snapshot, the high
watermark known here, the voter set, and the checks every request goes
through (cluster id, voter set, epochs).

Voters (KIP-853): built with a plain iterable of node ids, the quorum is
static (`controller.quorum.voters`, kraft.version 0) and behaves exactly as
KIP-595 says. Built with a `VoterSet` (the bootstrap voters written by
`storage format`, possibly empty for a node that will join), it is dynamic:
the voter set in force is the latest VotersRecord control entry in the log,
committed or not, else the snapshot's, else the bootstrap set; truncation
reverts it. A node is a voter when its replica key (id, directory id) is in
the set and an observer otherwise, and moves between the two as the set
changes (`_settle`, after each input). What depends on the election state is delegated to
`self.state` (states.py, leader.py); transitions go through `self.quorum`.
"""

from __future__ import annotations

import random
from typing import Callable, Iterable, Optional, Sequence

from .config import QuorumConfig
from .leader import Leader
from .log import RaftLog
from .messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    EpochEndOffset,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    QuorumInfo,
    SnapshotId,
    VoteRequest,
    VoteResponse,
    AddVoterRequest,
    RemoveVoterRequest,
    UpdateVoterRequest,
    VoterChangeResponse,
)
from .quorum import QuorumState
from .ready import CommittedEntries, DurableState, QuorumStateData, Ready, Snapshot
from .states import ElectionState
from .voters import (
    ReplicaKey,
    VoterSet,
    check_directory_id,
    snapshot_payload,
    voters_entry_data,
    voters_of_entry,
)


class NotLeaderError(Exception):
    """The operation needs the leader; `leader_id`/`epoch` say who leads, if known."""

    def __init__(self, leader_id: Optional[int], epoch: int) -> None:
        super().__init__(f"not the leader (leader={leader_id}, epoch={epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


class RaftCore:
    def __init__(
        self,
        node_id: int,
        voters: Iterable[int] | VoterSet,
        cluster_id: str,
        rng: random.Random,
        config: Optional[QuorumConfig] = None,
        now: int = 0,
        durable: Optional[DurableState] = None,
        *,
        directory_id: Optional[str] = None,
        bootstrap_ids: Iterable[int] = (),
    ) -> None:
        self.node_id = node_id
        self.directory_id = check_directory_id(directory_id)
        self.key = ReplicaKey(node_id, self.directory_id)
        self.dynamic = isinstance(voters, VoterSet)
        bootstrap = voters if isinstance(voters, VoterSet) else VoterSet.of_ids(voters)
        assert self.dynamic or len(bootstrap) > 0
        # Whom an observer that knows no voter asks who leads
        # (controller.quorum.bootstrap.servers, resolved to ids by the shell).
        self.bootstrap_ids = tuple(b for b in bootstrap_ids if b != node_id)
        self.cluster_id = cluster_id
        self.rng = rng
        self.config = config or QuorumConfig()
        self.now = now
        # Called with (old, new) on every election state change; for logs and traces.
        self.on_transition: Optional[Callable[[ElectionState, ElectionState], None]] = None

        durable = durable or DurableState()
        snapshot = durable.snapshot
        if snapshot is not None:
            assert durable.log_start_offset == snapshot.snapshot_id.end_offset, "log must start at the snapshot"
            self.log = RaftLog(snapshot.snapshot_id.end_offset, snapshot.snapshot_id.epoch, durable.entries)
        else:
            assert durable.log_start_offset == 0
            self.log = RaftLog(0, 0, durable.entries)
        self.snapshot: Optional[Snapshot] = snapshot
        # The voter set before the log's first VotersRecord, and every
        # VotersRecord in the log as (offset, voters), oldest first.
        self._base_voters = snapshot.voters if snapshot is not None and snapshot.voters is not None else bootstrap
        self._voters_in_snapshot = snapshot is not None and snapshot.voters is not None
        self._voter_records: list[tuple[int, VoterSet]] = []
        self._payload_cache: Optional[tuple[SnapshotId, bytes]] = None
        for offset, entry in enumerate(durable.entries, self.log.start_offset):
            self._note_entry(offset, entry)
        self.flushed_end = self.log.end_offset  # what survived is flushed
        # The high watermark known here. After a restart only the snapshot is
        # known to be committed; the leader will tell us the rest.
        self.high_watermark = self.log.start_offset
        self._apply_voters()
        self._voters_moved = False
        self._applied_end = self.log.start_offset  # committed entries handed out so far
        self._handed_end = self.log.end_offset  # log end the shell has been told about
        self._pending_truncate: Optional[int] = None
        self._pending_log_start: Optional[int] = None
        self._pending_install: Optional[Snapshot] = None
        self._pending_save: Optional[Snapshot] = None
        self._outbox: list[Message] = []
        self._next_cid = 1
        self._dispatch: dict[type, Callable[[Message], None]] = {
            VoteRequest: self._on_vote_request,  # type: ignore[dict-item]
            BeginQuorumEpochRequest: self._on_begin_quorum_epoch_request,  # type: ignore[dict-item]
            EndQuorumEpochRequest: self._on_end_quorum_epoch_request,  # type: ignore[dict-item]
            FetchRequest: self._on_fetch_request,  # type: ignore[dict-item]
            FetchSnapshotRequest: self._on_fetch_snapshot_request,  # type: ignore[dict-item]
            DescribeQuorumRequest: self._on_describe_quorum_request,  # type: ignore[dict-item]
            AddVoterRequest: self._on_voter_change_request,  # type: ignore[dict-item]
            RemoveVoterRequest: self._on_voter_change_request,  # type: ignore[dict-item]
            UpdateVoterRequest: self._on_voter_change_request,  # type: ignore[dict-item]
            VoteResponse: self._on_response,
            BeginQuorumEpochResponse: self._on_response,
            EndQuorumEpochResponse: self._on_response,
            FetchResponse: self._on_response,
            FetchSnapshotResponse: self._on_response,
            DescribeQuorumResponse: lambda m: None,
            VoterChangeResponse: lambda m: None,
        }
        self.quorum = QuorumState(self, durable.quorum_state)
        self.quorum.start()
        self._settle()

    # ======================================================================
    # Public face
    # ======================================================================

    @property
    def state(self) -> ElectionState:
        return self.quorum.state

    def epoch(self) -> int:
        return self.quorum.data.epoch

    def leader(self) -> Optional[int]:
        """The leader of the current epoch as far as this node knows (None during elections)."""
        return self.state.leader_id()

    def is_leader(self) -> bool:
        return isinstance(self.state, Leader)

    def quorum_state(self) -> QuorumStateData:
        return self.quorum.data

    def append(self, records: Sequence[bytes]) -> int:
        """Leader only: append records; returns the offset the last one will have.

        The records are in the current epoch(). They are committed when the
        committed entries output reaches that offset with that epoch; if the
        entry that commits there has another epoch, the append was lost to a
        leader change and must be retried.
        """
        state = self.state
        if not isinstance(state, Leader):
            raise NotLeaderError(self.leader(), self.epoch())
        records = list(records)
        if not records or not all(isinstance(r, (bytes, bytearray)) for r in records):
            raise ValueError("append takes a non-empty sequence of bytes")
        last = state.append(self, [bytes(r) for r in records])
        self._settle()
        return last

    def resign(self) -> None:
        """Leader only: step down gracefully, handing over to the most caught-up voter."""
        state = self.state
        if not isinstance(state, Leader):
            raise NotLeaderError(self.leader(), self.epoch())
        self.quorum.become_resigned(state.preferred_successors())

    def campaign(self) -> None:
        """Start an election now, as if the election timer had expired (begins with a pre-vote)."""
        if not self.is_voter or isinstance(self.state, Leader):
            raise ValueError("only a voter that is not leading can campaign")
        self.quorum.become_prospective()
        self._settle()

    def describe_quorum(self) -> QuorumInfo:
        state = self.state
        if not isinstance(state, Leader):
            raise NotLeaderError(self.leader(), self.epoch())
        return state.describe(self)

    def latest_snapshot(self) -> Optional[Snapshot]:
        return self.snapshot

    def create_snapshot(self, end_offset: int, data: bytes) -> SnapshotId:
        """The state machine has applied every committed entry below `end_offset`: keep its state.

        The log before `end_offset` is then deleted (the log start moves).
        """
        log = self.log
        if end_offset > self._applied_end:
            raise ValueError(f"snapshot at {end_offset} beyond what was applied ({self._applied_end})")
        if end_offset <= log.start_offset:
            raise ValueError(f"snapshot at {end_offset} is not after the log start {log.start_offset}")
        assert end_offset <= self._handed_end and end_offset <= self.high_watermark
        voters = self.voters_at(end_offset)
        snapshot = Snapshot(
            SnapshotId(end_offset, log.epoch_at(end_offset - 1)), bytes(data), voters if self.dynamic else None
        )
        self.snapshot = snapshot
        self._pending_save = snapshot
        log.delete_before(end_offset)
        self._base_voters = voters
        self._voters_in_snapshot = self._voters_in_snapshot or self.dynamic
        self._voter_records = [(o, v) for o, v in self._voter_records if o >= end_offset]
        self._pending_log_start = end_offset
        return snapshot.snapshot_id

    def step(self, message: Message, now: int) -> None:
        """Handle one received message."""
        self._set_now(now)
        if message.dst != self.node_id or message.src == self.node_id:
            return  # misrouted: not ours to answer
        handler = self._dispatch.get(type(message))
        if handler is not None:
            handler(message)
            self._settle()

    def peer_unreachable(self, node_id: int, now: int) -> None:
        """The shell could not reach `node_id` at all: the connection was refused
        or reset, so no process listens there (it crashed or is restarting).

        A follower then takes its leader for gone: it stops vouching for it
        (pre-votes are granted again) and campaigns after a short random
        backoff instead of waiting out the whole fetch timeout. Only such
        hard failures are reported, never timeouts: a slow or partitioned
        leader is still detected by the fetch timeout. A false report costs a
        refused pre-vote round, since the other voters still hear the leader.
        """
        self._set_now(now)
        self.state.on_peer_unreachable(self, node_id)
        self._settle()

    def tick(self, now: int) -> None:
        """Let time pass: fire every timer due at `now`."""
        self._set_now(now)
        for _ in range(8):
            if self.state.next_deadline() > self.now:
                return
            self.state.tick(self)
            self._settle()

    def next_deadline(self) -> float:
        """The next time (ms) tick() has something to do; inf when nothing is scheduled."""
        return self.state.next_deadline()

    def advance(self, flushed_end: int) -> None:
        """The shell flushed the log up to `flushed_end` (exclusive).

        Must come from an fsync that started after the shell handled the last
        Ready bundle it was given, so it describes the log as the core sees it.
        """
        flushed = min(flushed_end, self._handed_end)
        if flushed > self.flushed_end:
            self.flushed_end = flushed
            self.state.on_flushed(self)
            self._settle()

    def ready(self) -> Optional[Ready]:
        """Everything to persist, send and apply since the last call, or None."""
        quorum_state = self.quorum.take_unpersisted()
        install, self._pending_install = self._pending_install, None
        save, self._pending_save = self._pending_save, None
        truncate, self._pending_truncate = self._pending_truncate, None
        log_start, self._pending_log_start = self._pending_log_start, None
        log = self.log
        base = self._handed_end
        entries = log.entries_between(base, log.end_offset) if log.end_offset > base else ()
        self._handed_end = log.end_offset
        messages = tuple(self._outbox)
        self._outbox.clear()
        committed = None
        upto = min(self.high_watermark, log.end_offset)
        if upto > self._applied_end:
            assert self._applied_end >= log.start_offset
            committed = CommittedEntries(self._applied_end, log.entries_between(self._applied_end, upto))
            self._applied_end = upto
        if (
            quorum_state is None
            and install is None
            and save is None
            and truncate is None
            and not entries
            and log_start is None
            and not messages
            and committed is None
        ):
            return None
        return Ready(
            quorum_state=quorum_state,
            snapshot_to_install=install,
            snapshot_to_save=save,
            truncate_to=truncate,
            entries_base_offset=base,
            entries=entries,
            log_start_offset=log_start,
            messages=messages,
            committed=committed,
            high_watermark=self.high_watermark,
        )

    # ======================================================================
    # The voter set (KIP-853)
    # ======================================================================

    def _note_entry(self, offset: int, entry: Entry) -> None:
        if entry.control:
            try:
                voters = voters_of_entry(entry.data)
            except ValueError:
                voters = None  # a damaged record names no voters; the leader never writes one
            if voters is not None:
                self._voter_records.append((offset, voters))

    def _apply_voters(self) -> None:
        """Make the voter fields describe the set in force; note whether they moved.

        `in_voters`: this replica is in the set in force (its own vote and log
        count toward majorities). `is_voter`: it acts as a voter (follows with
        election timers, may campaign): when in the set, and also while the
        latest VotersRecord, which removes it, is not known to be committed.
        Until then it may still be needed to elect a leader that commits the
        removal (the Raft dissertation, 4.2.2): its log may be the longest.
        """
        voter_set = self._voter_records[-1][1] if self._voter_records else self._base_voters
        in_voters = voter_set.has_key(self.key)
        is_voter = in_voters
        if not in_voters and self._voter_records:
            last = self._voter_records[-1][0]
            is_voter = last >= self.high_watermark and self.voters_at(last).has_key(self.key)
        if getattr(self, "voter_set", None) == voter_set and self.is_voter == is_voter:
            self.voter_set = voter_set
            return
        self.voter_set = voter_set
        self.voters = voter_set.ids
        self.sorted_voters = tuple(sorted(self.voters))
        self.other_voters = tuple(v for v in self.sorted_voters if v != self.node_id)
        self.in_voters = in_voters
        self.is_voter = is_voter
        self.majority = voter_set.majority()
        self._voters_moved = True

    def _settle(self) -> None:
        """After each input: states follow a voter set that moved, and a leader
        that is no longer a voter resigns once the record removing it commits."""
        if self._voters_moved:
            self._voters_moved = False
            self.quorum.on_voters_changed()
        state = self.state
        if isinstance(state, Leader) and state.must_resign(self):
            self.quorum.become_resigned(state.preferred_successors())

    def voters_at(self, offset: int) -> VoterSet:
        """The voter set in force for the entries below `offset`."""
        found = self._base_voters
        for at, voters in self._voter_records:
            if at >= offset:
                break
            found = voters
        return found

    def voter_record_offsets(self) -> tuple[int, ...]:
        """Offsets of the VotersRecords in the log (for checks)."""
        return tuple(o for o, _ in self._voter_records)

    def last_voters_offset(self) -> int:
        """Offset of the latest VotersRecord in the log; -1 when the set comes from elsewhere."""
        return self._voter_records[-1][0] if self._voter_records else -1

    def voters_in_log(self) -> bool:
        """Whether the log or snapshot holds a VotersRecord (else the set is the bootstrap one)."""
        return bool(self._voter_records) or self._voters_in_snapshot

    def snapshot_payload(self) -> bytes:
        """The latest snapshot as FetchSnapshot sends it: its voters, then its data."""
        snapshot = self.snapshot
        assert snapshot is not None
        cached = self._payload_cache
        if cached is None or cached[0] != snapshot.snapshot_id:
            cached = self._payload_cache = (snapshot.snapshot_id, snapshot_payload(snapshot.data, snapshot.voters))
        return cached[1]

    def voters_entry(self, voters: VoterSet) -> Entry:
        return Entry(self.epoch(), voters_entry_data(voters), control=True)

    def addressed_to_me(self, directory_id: Optional[str]) -> bool:
        """A request naming this node's directory (or none) is for this replica (KIP-853)."""
        return directory_id is None or self.directory_id is None or directory_id == self.directory_id

    def may_follow(self, leader_id: Optional[int]) -> bool:
        """Whether a node named leader may be followed. A static quorum knows
        its leaders are voters; in a dynamic one our voter set may be behind."""
        return leader_id is not None and leader_id != self.node_id and (self.dynamic or leader_id in self.voters)

    # ======================================================================
    # Used by the election states
    # ======================================================================

    def _set_now(self, now: int) -> None:
        if now > self.now:
            self.now = now

    def on_state_change(self, old: ElectionState, new: ElectionState) -> None:
        if self.on_transition is not None:
            self.on_transition(old, new)

    def next_correlation_id(self) -> int:
        cid = self._next_cid
        self._next_cid = cid + 1
        return cid

    def send(self, message: Message) -> None:
        assert message.dst != self.node_id
        self._outbox.append(message)

    def random_election_timeout(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self.rng.randrange(timeout)

    def random_voter(self) -> Optional[int]:
        """A voter to ask who leads (a bootstrap server when no voter is known); None if none."""
        choices = self.other_voters or self.bootstrap_ids or tuple(v for v in self.sorted_voters if v != self.node_id)
        if not choices:
            return None
        return choices[self.rng.randrange(len(choices))]

    def send_fetch(self, target: int, epoch: int) -> int:
        cid = self.next_correlation_id()
        log = self.log
        self.send(
            FetchRequest(
                src=self.node_id,
                dst=target,
                correlation_id=cid,
                cluster_id=self.cluster_id,
                replica_id=self.node_id,
                epoch=epoch,
                fetch_offset=log.end_offset,
                last_fetched_epoch=log.last_epoch,
                max_wait_ms=self.config.fetch_wait_ms,
                replica_directory_id=self.directory_id,
            )
        )
        return cid

    def send_end_quorum_epoch(self, voter: int, epoch: int, preferred: tuple[int, ...]) -> None:
        self.send(
            EndQuorumEpochRequest(
                src=self.node_id,
                dst=voter,
                correlation_id=self.next_correlation_id(),
                cluster_id=self.cluster_id,
                leader_epoch=epoch,
                leader_id=self.node_id,
                preferred_successors=preferred,
            )
        )

    def learn_high_watermark(self, high_watermark: Optional[int]) -> None:
        if high_watermark is not None and high_watermark > self.high_watermark:
            self.high_watermark = high_watermark
            if not self.in_voters and self.is_voter:
                self._apply_voters()  # the removal of this node may have committed

    def append_as_leader(self, entries: list[Entry]) -> None:
        for entry in entries:
            assert entry.epoch == self.epoch()
            self._note_entry(self.log.append(entry), entry)
        self._apply_voters()

    def append_as_follower(self, entries: Sequence[Entry], high_watermark: Optional[int]) -> None:
        log = self.log
        last = log.last_epoch
        for entry in entries:
            if not (last <= entry.epoch <= self.epoch()) or not isinstance(entry.data, bytes):
                return  # not what a leader sends; ignore the whole response
            last = entry.epoch
        for entry in entries:
            self._note_entry(log.append(entry), entry)
        self._apply_voters()
        self.learn_high_watermark(high_watermark)

    def truncate_diverged(self, diverging: EpochEndOffset) -> bool:
        """The leader says our log diverged after `diverging`; cut it back. False if that makes no sense."""
        log = self.log
        mine = log.end_offset_for_epoch(diverging.epoch)
        target = log.start_offset if mine is None else min(diverging.end_offset, mine.end_offset)
        if target >= log.end_offset or target < log.start_offset:
            return False
        # Committed entries are on every future leader, so they never diverge.
        assert target >= min(self.high_watermark, log.end_offset), (target, self.high_watermark)
        assert target >= self._applied_end
        log.truncate_to(target)
        self._voter_records = [(o, v) for o, v in self._voter_records if o < target]
        self._apply_voters()
        if target < self.flushed_end:
            self.flushed_end = target
        if target < self._handed_end:
            self._handed_end = target
            if self._pending_truncate is None or target < self._pending_truncate:
                self._pending_truncate = target
        return True

    def install_snapshot(self, snapshot: Snapshot) -> None:
        """A follower caught up through a snapshot from the leader: restart the log at its end."""
        end, epoch = snapshot.snapshot_id
        log = self.log
        if end <= log.start_offset or (log.end_offset >= end and log.matches(end, epoch)):
            return  # our log already holds (or is past) all of it: a stale answer
        # The leader sends a snapshot when our log is shorter than its log
        # start, or when our last epoch predates its snapshot (we diverged
        # somewhere it can no longer see). Either way our entries from the
        # snapshot's end back to the divergence were never committed, so
        # nothing we applied (or reported to this leader) is lost here.
        assert self._applied_end < end, (self._applied_end, snapshot.snapshot_id)
        log.reset(end, epoch)
        self._voter_records = []
        if snapshot.voters is not None:
            self._base_voters = snapshot.voters
            self._voters_in_snapshot = True
        self._apply_voters()
        self.snapshot = snapshot
        self._pending_install = snapshot
        self._pending_save = None
        self._pending_truncate = None
        self._pending_log_start = None
        self._handed_end = end
        self.flushed_end = end
        self._applied_end = end
        self.learn_high_watermark(end)

    # ======================================================================
    # Requests: the checks every state shares, then the state's own part
    # ======================================================================

    def envelope(self, req: Message, error: Errors = Errors.NONE) -> dict:
        """The fields every response to `req` carries: addressing, the error,
        our epoch and the leader we know."""
        return dict(
            src=self.node_id,
            dst=req.src,
            correlation_id=req.correlation_id,
            error=error,
            epoch=self.epoch(),
            leader_id=self.leader(),
        )

    def reply(self, req: Message, error: Errors, error_message: str = "") -> None:
        """Answer `req` with `error` (NONE for a plain acknowledgement), our epoch and leader."""
        common = self.envelope(req, error)
        if isinstance(req, VoteRequest):
            resp: Message = VoteResponse(vote_granted=False, pre_vote=req.pre_vote, **common)  # type: ignore[arg-type]
        elif isinstance(req, FetchRequest):
            resp = FetchResponse(base_offset=req.fetch_offset, log_start_offset=self.log.start_offset, **common)  # type: ignore[arg-type]
        elif isinstance(req, FetchSnapshotRequest):
            resp = FetchSnapshotResponse(snapshot_id=req.snapshot_id, position=req.position, **common)  # type: ignore[arg-type]
        elif isinstance(req, BeginQuorumEpochRequest):
            resp = BeginQuorumEpochResponse(**common)  # type: ignore[arg-type]
        elif isinstance(req, EndQuorumEpochRequest):
            resp = EndQuorumEpochResponse(**common)  # type: ignore[arg-type]
        elif isinstance(req, (AddVoterRequest, RemoveVoterRequest, UpdateVoterRequest)):
            resp = VoterChangeResponse(error_message=error_message, **common)  # type: ignore[arg-type]
        else:
            resp = DescribeQuorumResponse(**common)  # type: ignore[arg-type]
        self.send(resp)

    def _on_vote_request(self, req: VoteRequest) -> None:
        if req.cluster_id != self.cluster_id:
            return self.reply(req, Errors.INCONSISTENT_CLUSTER_ID)
        if not self.addressed_to_me(req.voter_directory_id):
            return self.reply(req, Errors.INVALID_VOTER_KEY)
        # A dynamic quorum votes whatever its own voter set says: the set may
        # be behind the candidate's (a voter added by a record this node has
        # not fetched yet), and the candidate counts only its voters' votes.
        if not self.dynamic and (not self.is_voter or req.candidate_id not in self.voters):
            return self.reply(req, Errors.INCONSISTENT_VOTER_SET)
        if (
            req.candidate_id != req.src
            or req.candidate_epoch <= 0
            or req.last_epoch < 0
            or req.last_epoch_end_offset < 0
            or req.last_epoch >= req.candidate_epoch
            or (req.last_epoch == 0) != (req.last_epoch_end_offset == 0)
        ):
            return self.reply(req, Errors.INVALID_REQUEST)
        if req.candidate_epoch < self.epoch():
            return self.reply(req, Errors.FENCED_LEADER_EPOCH)
        log_ok = self.candidate_log_ok(req.last_epoch, req.last_epoch_end_offset)
        if req.pre_vote:
            # A pre-vote changes nothing here. Refused while we hear from a
            # leader, so a node that was away cannot disrupt a healthy quorum.
            granted = req.candidate_epoch > self.epoch() and log_ok and not self.state.has_live_leader(self)
        else:
            if req.candidate_epoch > self.epoch():
                self.quorum.become_unattached(req.candidate_epoch)
            granted = log_ok and self.quorum.can_grant_vote(req.candidate_id)
            if granted:
                # Persisted (Ready step 1) before this response goes out (step 6).
                self.quorum.grant_vote(req.candidate_id)
        self.send(
            VoteResponse(vote_granted=granted, pre_vote=req.pre_vote, **self.envelope(req))  # type: ignore[arg-type]
        )

    def candidate_log_ok(self, last_epoch: int, end_offset: int) -> bool:
        """A candidate's log is at least as up to date as ours (so it holds every committed entry)."""
        log = self.log
        return (last_epoch, end_offset) >= (log.last_epoch, log.end_offset)

    def _check_leader_request(
        self, req: BeginQuorumEpochRequest | EndQuorumEpochRequest
    ) -> bool:
        """Checks shared by Begin/EndQuorumEpoch; replies with the error and returns False if one fails."""
        if req.cluster_id != self.cluster_id:
            self.reply(req, Errors.INCONSISTENT_CLUSTER_ID)
            return False
        if isinstance(req, BeginQuorumEpochRequest) and not self.addressed_to_me(req.voter_directory_id):
            self.reply(req, Errors.INVALID_VOTER_KEY)
            return False
        if not self.dynamic and (not self.is_voter or req.leader_id not in self.voters):
            self.reply(req, Errors.INCONSISTENT_VOTER_SET)
            return False
        if req.leader_id != req.src or req.leader_epoch <= 0:
            self.reply(req, Errors.INVALID_REQUEST)
            return False
        if req.leader_epoch < self.epoch():
            self.reply(req, Errors.FENCED_LEADER_EPOCH)
            return False
        if req.leader_epoch == self.epoch() and self.quorum.data.leader_id not in (None, req.leader_id):
            # Another leader in our epoch: impossible in a correct quorum.
            self.reply(req, Errors.INVALID_REQUEST)
            return False
        return True

    def _follow(self, epoch: int, leader_id: int) -> None:
        """The leader itself told us it leads `epoch`."""
        if epoch > self.epoch() or self.state.leader_id() != leader_id:
            self.quorum.become_follower(epoch, leader_id, heard_from_leader=True)

    def _on_begin_quorum_epoch_request(self, req: BeginQuorumEpochRequest) -> None:
        if not self._check_leader_request(req):
            return
        self._follow(req.leader_epoch, req.leader_id)
        self.reply(req, Errors.NONE)

    def _on_end_quorum_epoch_request(self, req: EndQuorumEpochRequest) -> None:
        if not self._check_leader_request(req):
            return
        successors = req.preferred_successors
        if (not self.dynamic and not set(successors) <= self.voters) or len(set(successors)) != len(successors):
            self.reply(req, Errors.INCONSISTENT_VOTER_SET)
            return
        self._follow(req.leader_epoch, req.leader_id)
        position = successors.index(self.node_id) if self.node_id in successors else None
        self.state.on_leader_resigned(self, position, len(successors))
        self.reply(req, Errors.NONE)

    def _check_fetch_epoch(self, req: FetchRequest | FetchSnapshotRequest) -> bool:
        if req.cluster_id != self.cluster_id:
            self.reply(req, Errors.INCONSISTENT_CLUSTER_ID)
            return False
        if req.replica_id != req.src or req.replica_id < 0:
            self.reply(req, Errors.INVALID_REQUEST)
            return False
        if req.epoch < self.epoch():
            self.reply(req, Errors.FENCED_LEADER_EPOCH)
            return False
        if req.epoch > self.epoch():
            # No leader can exist in an epoch we have not reached.
            self.reply(req, Errors.UNKNOWN_LEADER_EPOCH)
            return False
        return True

    def _on_fetch_request(self, req: FetchRequest) -> None:
        if self._check_fetch_epoch(req):
            self.state.on_fetch_request(self, req)

    def _on_fetch_snapshot_request(self, req: FetchSnapshotRequest) -> None:
        if self._check_fetch_epoch(req):
            self.state.on_fetch_snapshot_request(self, req)

    def _on_describe_quorum_request(self, req: DescribeQuorumRequest) -> None:
        state = self.state
        if not isinstance(state, Leader):
            return self.reply(req, Errors.NOT_LEADER_OR_FOLLOWER)
        self.send(
            DescribeQuorumResponse(info=state.describe(self), **self.envelope(req))  # type: ignore[arg-type]
        )

    def _on_voter_change_request(self, req: AddVoterRequest | RemoveVoterRequest | UpdateVoterRequest) -> None:
        # An operator's tool may leave the cluster id out (Kafka's null): nothing to check then.
        if req.cluster_id and req.cluster_id != self.cluster_id:
            return self.reply(req, Errors.INCONSISTENT_CLUSTER_ID)
        state = self.state
        if not isinstance(state, Leader):
            return self.reply(req, Errors.NOT_LEADER_OR_FOLLOWER)
        state.on_voter_change(self, req)

    # ======================================================================
    # Responses
    # ======================================================================

    _RESPONSE_HANDLERS = {
        VoteResponse: "on_vote_response",
        BeginQuorumEpochResponse: "on_begin_quorum_epoch_response",
        EndQuorumEpochResponse: "on_end_quorum_epoch_response",
        FetchResponse: "on_fetch_response",
        FetchSnapshotResponse: "on_fetch_snapshot_response",
    }

    def _on_response(self, resp: Message) -> None:
        if resp.src not in self.voters and not self.dynamic:
            return  # a static quorum only ever asks voters
        # A granted vote is no reason to stop campaigning, whoever the voter
        # still calls leader; anything else naming a leader is.
        granted = isinstance(resp, VoteResponse) and resp.vote_granted
        self._observe(resp.src, resp.epoch, None if granted else resp.leader_id)  # type: ignore[union-attr]
        getattr(self.state, self._RESPONSE_HANDLERS[type(resp)])(self, resp)

    def _observe(self, src: int, epoch: int, leader_id: Optional[int]) -> None:
        """Voter `src` told us its epoch and leader: catch up with it."""
        known_leader = self.may_follow(leader_id)
        current = self.epoch()
        if epoch > current:
            if known_leader:
                self.quorum.become_follower(epoch, leader_id, heard_from_leader=src == leader_id)  # type: ignore[arg-type]
            else:
                self.quorum.become_unattached(epoch)
        elif epoch == current and known_leader:
            if self.quorum.data.leader_id in (None, leader_id) and self.state.leader_id() != leader_id:
                self.quorum.become_follower(epoch, leader_id, heard_from_leader=src == leader_id)  # type: ignore[arg-type]
