"""QuorumState: the one place that moves a node between election states.

It owns the durable quorum-state `(epoch, leader_id, voted_for)` and every
transition. A transition that changes what this node promised (a new epoch,
a vote, a leader) marks the quorum-state unpersisted; the core hands it to
the shell at the head of the next Ready bundle, before any message that
relies on it. The rules each transition checks are the protocol's safety
argument, so they are assertions, not comments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .ready import QuorumStateData
from .states import (
    Candidate,
    ElectionState,
    Follower,
    ObserverFollower,
    ObserverUnattached,
    Prospective,
    Resigned,
    Unattached,
)
from .leader import Leader

if TYPE_CHECKING:
    from .core import RaftCore


class QuorumState:
    __slots__ = ("_core", "data", "state", "_unpersisted")

    def __init__(self, core: "RaftCore", durable: Optional[QuorumStateData]) -> None:
        self._core = core
        self.data = durable or QuorumStateData(0, None, None)
        self._unpersisted = durable is None
        self.state: ElectionState = self._initial_state()

    def _initial_state(self) -> ElectionState:
        core = self._core
        epoch, leader_id, voted_for = self.data
        if leader_id == core.node_id:
            # We led this epoch before a restart. We may not lead it again (our
            # log may have lost unflushed entries), and we must not vote in it.
            if not core.is_voter:
                return ObserverUnattached(epoch)  # removed from the voters since (KIP-853)
            return Resigned(epoch, preferred_successors=())
        if leader_id is not None:
            return (Follower if core.is_voter else ObserverFollower)(epoch, leader_id)
        if not core.is_voter:
            return ObserverUnattached(epoch)
        return Unattached(epoch, voted_for)

    def start(self) -> None:
        self.state.on_enter(self._core)

    # --- facts -------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.data.epoch

    def take_unpersisted(self) -> Optional[QuorumStateData]:
        if not self._unpersisted:
            return None
        self._unpersisted = False
        return self.data

    def can_grant_vote(self, candidate_id: int) -> bool:
        """A real vote in the current epoch: at most one candidate, and never once a leader is known."""
        _, leader_id, voted_for = self.data
        return leader_id is None and voted_for in (None, candidate_id)

    # --- transitions -------------------------------------------------------

    def _persist(self, data: QuorumStateData) -> None:
        old = self.data
        assert data.epoch >= old.epoch, f"epoch goes back {old} -> {data}"
        if data.epoch == old.epoch:
            assert old.leader_id in (None, data.leader_id), f"second leader in epoch {old} -> {data}"
            assert old.voted_for in (None, data.voted_for), f"second vote in epoch {old} -> {data}"
        if data != old:
            self.data = data
            self._unpersisted = True

    def _swap(self, new_state: ElectionState) -> None:
        core = self._core
        old_state = self.state
        old_state.on_exit(core)
        self.state = new_state
        core.on_state_change(old_state, new_state)
        new_state.on_enter(core)

    def become_unattached(self, epoch: int) -> None:
        assert epoch > self.data.epoch, (epoch, self.data)
        self._persist(QuorumStateData(epoch, None, None))
        cls = Unattached if self._core.is_voter else ObserverUnattached
        self._swap(cls(epoch))

    def grant_vote(self, candidate_id: int) -> None:
        core = self._core
        assert core.dynamic or (core.is_voter and candidate_id in core.voters)
        assert self.can_grant_vote(candidate_id), (candidate_id, self.data)
        epoch = self.data.epoch
        self._persist(QuorumStateData(epoch, None, candidate_id))
        if core.is_voter:
            self._swap(Unattached(epoch, candidate_id))  # a fresh election timer, too
        # A dynamic quorum's observer may vote (its voter set may be behind the
        # candidate's); the vote is durable, and it stays an observer.

    def become_prospective(self) -> None:
        assert self._core.is_voter
        assert isinstance(self.state, (Unattached, Follower, Candidate, Resigned, Prospective)), self.state
        self._swap(Prospective(self.data.epoch))

    def become_candidate(self) -> None:
        core = self._core
        assert isinstance(self.state, Prospective), self.state
        epoch = self.data.epoch + 1
        self._persist(QuorumStateData(epoch, None, core.node_id))
        self._swap(Candidate(epoch))

    def become_leader(self) -> None:
        core = self._core
        state = self.state
        assert isinstance(state, Candidate) and state.epoch == self.data.epoch, state
        assert self.data.voted_for == core.node_id
        self._persist(QuorumStateData(self.data.epoch, core.node_id, core.node_id))
        self._swap(Leader(self.data.epoch))

    def become_follower(self, epoch: int, leader_id: int, heard_from_leader: bool) -> None:
        core = self._core
        assert core.may_follow(leader_id), leader_id
        old = self.data
        assert epoch >= old.epoch
        if epoch == old.epoch:
            assert not isinstance(self.state, (Leader, Resigned)), f"{self.state} told of leader {leader_id}"
            voted_for = old.voted_for
        else:
            voted_for = None
        self._persist(QuorumStateData(epoch, leader_id, voted_for))
        cls = Follower if core.is_voter else ObserverFollower
        self._swap(cls(epoch, leader_id, heard_from_leader))

    def become_resigned(self, preferred_successors: tuple[int, ...]) -> None:
        assert isinstance(self.state, Leader), self.state
        self._swap(Resigned(self.data.epoch, preferred_successors))

    def become_observer(self) -> None:
        """A resigned leader that is no longer a voter looks for the new leader."""
        assert not self._core.is_voter and isinstance(self.state, Resigned), self.state
        self._swap(ObserverUnattached(self.data.epoch))

    def on_voters_changed(self) -> None:
        """The voter set in force moved: a node that became a voter or an
        observer takes the matching state, in the same epoch with the same
        promises (nothing here is persisted: the quorum-state is unchanged)."""
        core = self._core
        state = self.state
        epoch = self.data.epoch
        if isinstance(state, Leader):
            state.sync_voters(core)
        elif isinstance(state, Resigned):
            pass  # its timer hands over; a resigned non-voter then becomes an observer
        elif core.is_voter:
            if isinstance(state, ObserverFollower):
                self._swap(Follower(epoch, state.leader, heard_from_leader=state.has_live_leader(core)))
            elif isinstance(state, ObserverUnattached):
                self._swap(Unattached(epoch, self.data.voted_for))
        elif isinstance(state, Follower) and not isinstance(state, ObserverFollower):
            self._swap(ObserverFollower(epoch, state.leader, heard_from_leader=state.has_live_leader(core)))
        elif isinstance(state, (Unattached, Prospective, Candidate)):
            self._swap(ObserverUnattached(epoch))
