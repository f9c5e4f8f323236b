"""Election states other than the leader (see leader.py).

Each state is a small object that holds only what it needs and supplies
the behaviour for its part of the protocol; the core calls the current
state's methods and never asks "which role am I?". Transitions go through
`core.quorum` (quorum.py), which persists what the node promised.

    Unattached --election timeout--> Prospective --majority of pre-votes--> Candidate
    Candidate --majority of votes--> Leader --check-quorum / resign()--> Resigned
    Follower --fetch timeout, or leader resigned--> Prospective
    any --higher epoch seen--> Unattached or Follower

Observers (non-voters) only ever are ObserverUnattached or ObserverFollower.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Optional

from .messages import (
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)
from .ready import Snapshot
from .voters import split_snapshot_payload

if TYPE_CHECKING:
    from .core import RaftCore

NEVER = float("inf")


class ElectionState:
    """Defaults: a state that is not leader and has no timers."""

    __slots__ = ("epoch",)
    name = "?"

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def __repr__(self) -> str:
        return f"{self.name}(epoch={self.epoch})"

    def leader_id(self) -> Optional[int]:
        """The leader this node currently follows or is; None otherwise."""
        return None

    def has_live_leader(self, core: "RaftCore") -> bool:
        """True while a leader is known and heard from within the fetch timeout (refuses pre-votes)."""
        return False

    def on_enter(self, core: "RaftCore") -> None:
        pass

    def on_exit(self, core: "RaftCore") -> None:
        pass

    def tick(self, core: "RaftCore") -> None:
        pass

    def next_deadline(self) -> float:
        return NEVER

    def on_flushed(self, core: "RaftCore") -> None:
        pass

    # Requests only a leader serves.
    def on_fetch_request(self, core: "RaftCore", req: FetchRequest) -> None:
        core.reply(req, Errors.NOT_LEADER_OR_FOLLOWER)

    def on_fetch_snapshot_request(self, core: "RaftCore", req: FetchSnapshotRequest) -> None:
        core.reply(req, Errors.NOT_LEADER_OR_FOLLOWER)

    # Responses; states that sent nothing of the kind ignore them.
    def on_vote_response(self, core: "RaftCore", resp: VoteResponse) -> None:
        pass

    def on_fetch_response(self, core: "RaftCore", resp: FetchResponse) -> None:
        pass

    def on_fetch_snapshot_response(self, core: "RaftCore", resp: FetchSnapshotResponse) -> None:
        pass

    def on_begin_quorum_epoch_response(self, core: "RaftCore", resp: BeginQuorumEpochResponse) -> None:
        pass

    def on_end_quorum_epoch_response(self, core: "RaftCore", resp: EndQuorumEpochResponse) -> None:
        pass

    def on_leader_resigned(self, core: "RaftCore", position: Optional[int], successors: int) -> None:
        """EndQuorumEpoch from the leader we follow: `position` in its preferred successors."""

    def on_peer_unreachable(self, core: "RaftCore", node_id: int) -> None:
        """Nothing listens at `node_id` (see RaftCore.peer_unreachable)."""


# --- Unattached -------------------------------------------------------------


class Unattached(ElectionState):
    """A voter that knows no leader in its epoch (it may have voted in it)."""

    __slots__ = ("voted_for", "election_deadline")
    name = "Unattached"

    def __init__(self, epoch: int, voted_for: Optional[int] = None) -> None:
        super().__init__(epoch)
        self.voted_for = voted_for  # shown in traces; the durable copy is in QuorumState

    def __repr__(self) -> str:
        voted = "" if self.voted_for is None else f", voted={self.voted_for}"
        return f"{self.name}(epoch={self.epoch}{voted})"

    def on_enter(self, core: "RaftCore") -> None:
        self.election_deadline = core.now + core.random_election_timeout()

    def tick(self, core: "RaftCore") -> None:
        if core.now >= self.election_deadline:
            core.quorum.become_prospective()

    def next_deadline(self) -> float:
        return self.election_deadline


class ObserverUnattached(ElectionState):
    """An observer looking for the leader: it asks random voters with Fetch."""

    __slots__ = ("inflight", "resend_at")
    name = "Unattached"

    def on_enter(self, core: "RaftCore") -> None:
        self._ask(core)

    def _ask(self, core: "RaftCore") -> None:
        target = core.random_voter()
        # No voter known and no bootstrap server to ask: wait for news (a
        # snapshot or BeginQuorumEpoch) and look again later.
        self.inflight = None if target is None else core.send_fetch(target, self.epoch)
        self.resend_at = core.now + core.config.fetch_retry_ms

    def tick(self, core: "RaftCore") -> None:
        if core.now >= self.resend_at:
            self._ask(core)

    def next_deadline(self) -> float:
        return self.resend_at

    def on_fetch_response(self, core: "RaftCore", resp: FetchResponse) -> None:
        # A response naming a leader has already moved us to ObserverFollower.
        if resp.correlation_id == self.inflight:
            self.inflight = None
            self.resend_at = min(self.resend_at, core.now + core.config.retry_backoff_ms)


# --- Prospective and Candidate ------------------------------------------------


class _Election(ElectionState, abc.ABC):
    """Shared by Prospective (pre-vote) and Candidate (vote): count answers from voters."""

    __slots__ = ("granted", "rejected", "expected", "election_deadline")
    pre_vote = False

    def on_enter(self, core: "RaftCore") -> None:
        self.granted = {core.node_id}
        self.rejected: set[int] = set()
        self.expected: dict[int, int] = {}
        self.election_deadline = core.now + core.random_election_timeout()
        if self._won(core):
            self.won(core)
            return
        log = core.log
        proposed = self.epoch + 1 if self.pre_vote else self.epoch
        for voter in core.other_voters:
            cid = core.next_correlation_id()
            self.expected[voter] = cid
            core.send(
                VoteRequest(
                    src=core.node_id,
                    dst=voter,
                    correlation_id=cid,
                    cluster_id=core.cluster_id,
                    candidate_epoch=proposed,
                    candidate_id=core.node_id,
                    last_epoch=log.last_epoch,
                    last_epoch_end_offset=log.end_offset,
                    pre_vote=self.pre_vote,
                    candidate_directory_id=core.directory_id,
                    voter_directory_id=core.voter_set.key_of(voter).directory_id,  # type: ignore[union-attr]
                )
            )

    def _won(self, core: "RaftCore") -> bool:
        # Only votes of the voter set in force count (it may have moved since the round began).
        return len(self.granted & core.voters) >= core.majority

    @abc.abstractmethod
    def won(self, core: "RaftCore") -> None:
        """A majority granted: the next step differs for pre-vote and vote."""

    def tick(self, core: "RaftCore") -> None:
        if core.now >= self.election_deadline:
            core.quorum.become_prospective()  # a fresh pre-vote round

    def next_deadline(self) -> float:
        return self.election_deadline

    def on_vote_response(self, core: "RaftCore", resp: VoteResponse) -> None:
        if resp.pre_vote != self.pre_vote or resp.epoch != self.epoch:
            return
        if self.expected.get(resp.src) != resp.correlation_id:
            return  # an answer to an earlier round, or a duplicate
        if resp.error is Errors.NONE and resp.vote_granted:
            self.granted.add(resp.src)
            if self._won(core):
                self.won(core)
        else:
            self._reject(core, resp.src)

    def on_peer_unreachable(self, core: "RaftCore", node_id: int) -> None:
        # A voter with no process listening cannot grant: count it as a "no",
        # so a split vote with a voter down backs off briefly instead of
        # waiting out the whole election timeout.
        if node_id in self.expected and node_id not in self.granted:
            self._reject(core, node_id)

    def _reject(self, core: "RaftCore", voter: int) -> None:
        if voter in self.rejected:
            return  # a duplicate answer must not draw a new backoff
        self.rejected.add(voter)
        if len(self.rejected) >= core.majority:
            # Cannot win this round: back off a random while, then retry.
            backoff = core.rng.randint(0, core.config.election_backoff_max_ms)
            self.election_deadline = min(self.election_deadline, core.now + backoff)


class Prospective(_Election):
    """KIP-996 pre-vote: ask whether we could win before bumping the epoch."""

    __slots__ = ()
    name = "Prospective"
    pre_vote = True

    def won(self, core: "RaftCore") -> None:
        core.quorum.become_candidate()


class Candidate(_Election):
    """Has bumped the epoch and voted for itself; asks for real votes."""

    __slots__ = ()
    name = "Candidate"
    pre_vote = False

    def won(self, core: "RaftCore") -> None:
        core.quorum.become_leader()


# --- Follower -----------------------------------------------------------------


class _SnapshotDownload:
    __slots__ = ("snapshot_id", "size", "position", "chunks")

    def __init__(self, snapshot_id: SnapshotId) -> None:
        self.snapshot_id = snapshot_id
        self.size = -1
        self.position = 0
        self.chunks: list[bytes] = []


class Follower(ElectionState):
    """Knows the leader of its epoch and pulls the log from it.

    One request is in flight at a time. The next Fetch goes out only once
    everything fetched so far is flushed, so the fetch offset the leader
    counts toward the high watermark is always durable here.
    """

    __slots__ = (
        "leader",
        "heard_on_enter",
        "last_heard",
        "fetch_deadline",
        "inflight",
        "resend_at",
        "retry_at",
        "awaiting_flush",
        "leader_resigned",
        "election_deadline",
        "download",
    )
    name = "Follower"

    def __init__(self, epoch: int, leader: int, heard_from_leader: bool = False) -> None:
        super().__init__(epoch)
        self.leader = leader
        # Whether the leader itself just told us it leads. A node that only
        # heard of the leader from others must not vouch for it (refusing
        # pre-votes) before fetching from it successfully.
        self.heard_on_enter = heard_from_leader
        self.last_heard: float = -NEVER
        self.inflight: Optional[int] = None
        self.resend_at: float = NEVER
        self.retry_at: float = NEVER
        self.awaiting_flush = False
        self.leader_resigned = False
        self.election_deadline: float = NEVER
        self.download: Optional[_SnapshotDownload] = None

    def __repr__(self) -> str:
        return f"{self.name}(epoch={self.epoch}, leader={self.leader})"

    def leader_id(self) -> Optional[int]:
        return self.leader

    def fetch_target(self, core: "RaftCore") -> int:
        return self.leader

    def on_enter(self, core: "RaftCore") -> None:
        self.fetch_deadline = core.now + core.config.fetch_timeout_ms
        if self.heard_on_enter:
            self.last_heard = core.now
        self.send_next(core)

    def has_live_leader(self, core: "RaftCore") -> bool:
        return not self.leader_resigned and core.now < self.last_heard + core.config.fetch_timeout_ms

    def _heard_from_leader(self, core: "RaftCore") -> None:
        self.last_heard = core.now
        self.fetch_deadline = core.now + core.config.fetch_timeout_ms

    def send_next(self, core: "RaftCore") -> None:
        self.retry_at = NEVER
        target = self.fetch_target(core)
        if self.download is not None:
            d = self.download
            cid = core.next_correlation_id()
            core.send(
                FetchSnapshotRequest(
                    src=core.node_id,
                    dst=target,
                    correlation_id=cid,
                    cluster_id=core.cluster_id,
                    replica_id=core.node_id,
                    epoch=self.epoch,
                    snapshot_id=d.snapshot_id,
                    position=d.position,
                    max_bytes=core.config.fetch_snapshot_max_bytes,
                    replica_directory_id=core.directory_id,
                )
            )
        elif core.flushed_end < core.log.end_offset:
            self.inflight = None
            self.resend_at = NEVER
            self.awaiting_flush = True
            return
        else:
            cid = core.send_fetch(target, self.epoch)
        self.awaiting_flush = False
        self.inflight = cid
        self.resend_at = core.now + core.config.fetch_retry_ms

    def on_flushed(self, core: "RaftCore") -> None:
        if self.awaiting_flush and core.flushed_end >= core.log.end_offset:
            self.send_next(core)

    def tick(self, core: "RaftCore") -> None:
        now = core.now
        if now >= self.election_deadline:
            core.quorum.become_prospective()
        elif now >= self.fetch_deadline:
            self.on_fetch_timeout(core)
        elif now >= self.resend_at or now >= self.retry_at:
            self.send_next(core)

    def on_fetch_timeout(self, core: "RaftCore") -> None:
        core.quorum.become_prospective()

    def next_deadline(self) -> float:
        return min(self.election_deadline, self.fetch_deadline, self.resend_at, self.retry_at)

    def _retry_later(self, core: "RaftCore") -> None:
        self.inflight = None
        self.resend_at = NEVER
        # Once the leader has said it no longer leads, there is nothing to
        # fetch: wait for the election (or news of a new leader).
        self.retry_at = NEVER if self.leader_resigned else core.now + core.config.retry_backoff_ms

    def on_leader_resigned(self, core: "RaftCore", position: Optional[int], successors: int) -> None:
        if position is None:
            delay = core.random_election_timeout()
        else:
            # The most caught-up successor campaigns at once, the others later
            # in order, so the handover does not split the vote.
            delay = position * core.config.election_backoff_max_ms // max(successors, 1)
        self.leader_resigned = True
        self.election_deadline = min(self.election_deadline, core.now + delay)

    def on_peer_unreachable(self, core: "RaftCore", node_id: int) -> None:
        # Only the first report counts: the fetch is retried every few ms,
        # and a fresh random delay each time would shrink toward zero and
        # make every follower campaign at once.
        if node_id == self.leader and not self.leader_resigned:
            self.leader_resigned = True
            delay = core.rng.randrange(max(1, core.config.election_backoff_max_ms))
            self.election_deadline = min(self.election_deadline, core.now + delay)

    def on_fetch_response(self, core: "RaftCore", resp: FetchResponse) -> None:
        if resp.correlation_id != self.inflight or self.download is not None:
            return
        if resp.error is not Errors.NONE or resp.src != self.leader or resp.epoch != self.epoch:
            if (
                resp.error is Errors.NOT_LEADER_OR_FOLLOWER
                and resp.src == self.leader
                and resp.epoch == self.epoch
            ):
                self.on_leader_resigned(core, None, 0)
            self._retry_later(core)
            return
        self.inflight = None
        self._heard_from_leader(core)
        if resp.diverging_epoch is not None:
            if not core.truncate_diverged(resp.diverging_epoch):
                self._retry_later(core)
                return
        elif resp.snapshot_id is not None:
            self.download = _SnapshotDownload(resp.snapshot_id)
        elif resp.records:
            if resp.base_offset != core.log.end_offset:
                self._retry_later(core)
                return
            core.append_as_follower(resp.records, resp.high_watermark)
        else:
            core.learn_high_watermark(resp.high_watermark)
        self.send_next(core)

    def on_fetch_snapshot_response(self, core: "RaftCore", resp: FetchSnapshotResponse) -> None:
        d = self.download
        if resp.correlation_id != self.inflight or d is None:
            return
        if resp.src != self.leader or resp.epoch != self.epoch:
            self._retry_later(core)
            return
        if resp.error in (Errors.SNAPSHOT_NOT_FOUND, Errors.POSITION_OUT_OF_RANGE):
            # The leader moved on to a newer snapshot: ask the log again.
            self._heard_from_leader(core)
            self.download = None
            self.send_next(core)
            return
        if resp.error is not Errors.NONE:
            if resp.error is Errors.NOT_LEADER_OR_FOLLOWER:
                self.on_leader_resigned(core, None, 0)
            self._retry_later(core)
            return
        self._heard_from_leader(core)
        chunk = resp.chunk
        if (
            resp.snapshot_id != d.snapshot_id
            or resp.position != d.position
            or resp.position + len(chunk) > resp.size
            or (not chunk and resp.position < resp.size)
        ):
            self.download = None
            self._retry_later(core)
            return
        d.chunks.append(chunk)
        d.position += len(chunk)
        d.size = resp.size
        if d.position == d.size:
            self.download = None
            try:
                data, voters = split_snapshot_payload(b"".join(d.chunks))
            except ValueError:
                self._retry_later(core)  # damaged on the way: fetch it again
                return
            core.install_snapshot(Snapshot(d.snapshot_id, data, voters))
        self.send_next(core)


class ObserverFollower(Follower):
    """An observer fetching from the leader; on silence it asks a random voter who leads."""

    __slots__ = ("target",)

    def __init__(self, epoch: int, leader: int, heard_from_leader: bool = False) -> None:
        super().__init__(epoch, leader, heard_from_leader)
        self.target = leader

    def fetch_target(self, core: "RaftCore") -> int:
        return self.target

    def on_fetch_timeout(self, core: "RaftCore") -> None:
        self.target = core.random_voter() or self.leader
        self.download = None
        self._heard_from_leader(core)  # give the new target a full timeout
        self.send_next(core)

    def on_fetch_response(self, core: "RaftCore", resp: FetchResponse) -> None:
        if resp.correlation_id == self.inflight and resp.src != self.leader:
            # A voter that is not the leader answered our search; the leader it
            # named (if newer) has already been adopted by the core.
            self.target = self.leader
            self._retry_later(core)
            return
        super().on_fetch_response(core, resp)

    def on_leader_resigned(self, core: "RaftCore", position: Optional[int], successors: int) -> None:
        self.target = core.random_voter() or self.leader

    def on_peer_unreachable(self, core: "RaftCore", node_id: int) -> None:
        # An observer never campaigns: it looks for the leader elsewhere.
        if node_id != self.target:
            return
        target = core.random_voter() or self.leader
        if target == node_id:
            # Nobody else to ask (a voter set of one, down): again after a
            # backoff, not at once - each refusal would send another fetch.
            self._retry_later(core)
            return
        self.target = target
        self.download = None
        self._heard_from_leader(core)  # give the new target a full timeout
        self.send_next(core)


# --- Resigned -----------------------------------------------------------------


class Resigned(ElectionState):
    """A leader that gave up its epoch: it tells the voters (EndQuorumEpoch) and waits to campaign."""

    __slots__ = ("preferred_successors", "unacked", "resend_at", "election_deadline")
    name = "Resigned"

    def __init__(self, epoch: int, preferred_successors: tuple[int, ...]) -> None:
        super().__init__(epoch)
        self.preferred_successors = preferred_successors

    def on_enter(self, core: "RaftCore") -> None:
        self.unacked = set(core.other_voters)
        self.election_deadline = core.now + core.random_election_timeout()
        self._send(core)

    def _send(self, core: "RaftCore") -> None:
        for voter in sorted(self.unacked):
            core.send_end_quorum_epoch(voter, self.epoch, self.preferred_successors)
        self.resend_at = core.now + core.config.request_timeout_ms if self.unacked else NEVER

    def tick(self, core: "RaftCore") -> None:
        if core.now >= self.election_deadline:
            if core.is_voter:
                core.quorum.become_prospective()
            else:
                core.quorum.become_observer()  # removed from the voters (KIP-853)
        elif core.now >= self.resend_at:
            self._send(core)

    def next_deadline(self) -> float:
        return min(self.election_deadline, self.resend_at)

    def on_end_quorum_epoch_response(self, core: "RaftCore", resp: EndQuorumEpochResponse) -> None:
        if resp.error is Errors.NONE:
            self.unacked.discard(resp.src)
