"""ISR decisions, pure: from the leader's view of its followers and a clock
reading to the ISR it should propose. The leader sends the proposal as an
AlterPartition request; until the controller answers (or the metadata log
shows the change), the high watermark counts the "maximal ISR" - the union
of the ISR and the proposal - so an acks=all write never depends on a
member the controller might drop without the leader knowing.

Kafka's rules:
- a follower is in sync while its log end offset equals the leader's, or it
  was caught up within `replica.lag.time.max.ms` ("caught up at time t" =
  it had fetched up to the leader's log end offset as of t);
- an out-of-sync follower may join once its fetch offset has reached both
  the high watermark and the start of the leader's epoch, and its broker is
  eligible (registered, unfenced, not shutting down, and - KIP-903 - its
  fetches carry the broker epoch of its current registration, so a fetch of
  an incarnation that has since restarted earns nothing);
- a partition elected uncleanly (RECOVERING) first reports RECOVERED and
  takes no new members until then.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterator, Mapping
from typing import Callable, Iterable, Optional


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower in the current leader epoch."""

    broker_id: int
    log_end_offset: Optional[int] = None  # its last fetch offset; None until it fetches in this epoch
    last_caught_up_ms: int = 0
    last_fetch_ms: Optional[int] = None
    last_fetch_leader_end_offset: int = -1  # the leader's log end offset at that fetch
    broker_epoch: int = -1  # the broker epoch its last fetch carried (-1: not known)
    log_start_offset: int = -1  # its log start offset, as its last fetch said (DeleteRecords' low watermark)

    def record_fetch(self, fetch_offset: int, leader_end_offset: int, now_ms: int, broker_epoch: int = -1,
                     log_start_offset: int = -1) -> None:
        """A fetch at `fetch_offset` means the follower holds everything below it.
        Reaching the leader's end offset makes it caught up now; reaching the
        end offset the leader had at the previous fetch makes it caught up as
        of that previous fetch."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif self.last_fetch_ms is not None and fetch_offset >= self.last_fetch_leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.broker_epoch = broker_epoch
        self.log_start_offset = log_start_offset
        self.last_fetch_ms = now_ms
        self.last_fetch_leader_end_offset = leader_end_offset


class Followers(Mapping[int, FollowerState]):
    """The leader's FollowerStates by broker id, held as a tuple: a
    partition has a few followers, and a dict for each partition led costs
    more than twice as much (docs/bench.md, target 6)."""

    __slots__ = ("_states",)

    def __init__(self, states: Iterable[FollowerState] = ()) -> None:
        self._states = tuple(states)

    def get(self, broker_id: int, default: Optional[FollowerState] = None) -> Optional[FollowerState]:
        for state in self._states:
            if state.broker_id == broker_id:
                return state
        return default

    def __getitem__(self, broker_id: int) -> FollowerState:
        state = self.get(broker_id)
        if state is None:
            raise KeyError(broker_id)
        return state

    def __contains__(self, broker_id: object) -> bool:
        return any(state.broker_id == broker_id for state in self._states)

    def __iter__(self) -> Iterator[int]:
        return (state.broker_id for state in self._states)

    def __len__(self) -> int:
        return len(self._states)


def is_caught_up(follower: FollowerState, leader_end_offset: int, now_ms: int, lag_max_ms: int) -> bool:
    return follower.log_end_offset == leader_end_offset or now_ms - follower.last_caught_up_ms <= lag_max_ms


def out_of_sync(isr: Iterable[int], leader_id: int, followers: Mapping[int, FollowerState],
                leader_end_offset: int, now_ms: int, lag_max_ms: int) -> list[int]:
    """The ISR members (never the leader) that have not caught up for too long."""
    return [b for b in isr if b != leader_id and (
        b not in followers or not is_caught_up(followers[b], leader_end_offset, now_ms, lag_max_ms))]


def can_join(follower: FollowerState, high_watermark: int, epoch_start_offset: int) -> bool:
    offset = follower.log_end_offset
    return offset is not None and offset >= high_watermark and offset >= epoch_start_offset


def ready_to_join(replicas: Iterable[int], isr: Iterable[int], followers: Mapping[int, FollowerState],
                  high_watermark: int, epoch_start_offset: int, eligible: Callable[[int, int], bool]) -> list[int]:
    """`eligible(broker id, broker epoch of its last fetch)`."""
    members = set(isr)
    return [b for b in replicas if b not in members and b in followers
            and eligible(b, followers[b].broker_epoch)
            and can_join(followers[b], high_watermark, epoch_start_offset)]


def next_isr(isr: tuple[int, ...], leaving: Iterable[int], joining: Iterable[int]) -> Optional[tuple[int, ...]]:
    """The ISR without `leaving` and with `joining` (in that order); None if unchanged."""
    gone = set(leaving)
    proposed = tuple(b for b in isr if b not in gone)
    proposed += tuple(b for b in joining if b not in proposed)
    return None if proposed == isr else proposed


def maximal_isr(isr: tuple[int, ...], proposed: Optional[Iterable[int]]) -> tuple[int, ...]:
    """The ISR a leader must honour while `proposed` is in flight: both."""
    if proposed is None:
        return isr
    return isr + tuple(b for b in proposed if b not in isr)


def high_watermark_bound(leader_id: int, leader_end_offset: int, members: Iterable[int],
                         followers: Mapping[int, FollowerState]) -> Optional[int]:
    """The offset every member holds: the least log end offset over the
    members; None while a member's is unknown (no fetch yet in this epoch)."""
    bound = leader_end_offset
    for b in members:
        if b == leader_id:
            continue
        follower = followers.get(b)
        if follower is None or follower.log_end_offset is None:
            return None
        bound = min(bound, follower.log_end_offset)
    return bound
