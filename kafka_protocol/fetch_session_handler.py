"""KIP-227 incremental fetch sessions, the fetching side (Kafka's
FetchSessionHandler), without I/O: one per broker fetched from. Used by the
replica fetcher (broker/replica_fetcher.py) and the consumer's fetcher
(client/fetcher.py); the leader's side is broker/fetch_session.py.

Each round the caller says what it wants fetched (partition -> its fetch
state: any hashable value, equal when nothing changed) and gets the
request's session id and epoch, the partitions to send and those to forget:

- no session yet (or after any failure): a full fetch, epoch 0, every
  partition; the answer's session id, if not 0, starts the session;
- in a session: an incremental fetch, the next epoch, only the partitions
  whose state differs from the last one sent, and `forgotten` those no
  longer wanted. Nothing changed: nothing sent, whatever the partition count.

A partition answered with an error is named again in the next request
(`resend`), as the broker answers it only when it changes.

An answer with FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH
(the broker evicted the session, or a request was lost) or a failed request
starts over with a full fetch; a full fetch naming the old session closes
it on the broker.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Generic, Hashable, Iterable, Mapping, Optional, TypeVar

from .errors import Errors

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1
SESSION_ERRORS = frozenset({Errors.FETCH_SESSION_ID_NOT_FOUND, Errors.INVALID_FETCH_SESSION_EPOCH})

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


@dataclass(frozen=True, slots=True)
class FetchPlan(Generic[K, V]):
    session_id: int
    epoch: int
    send: Mapping[K, V]   # the partitions the request names, with their state
    forgotten: list[K]    # incremental only: partitions dropped from the session

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler(Generic[K, V]):
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._sent: dict[K, V] = {}       # the session as the broker holds it
        self._pending: Optional[dict[K, V]] = None  # what it holds once the request in flight is answered
        self._delta: Optional[dict[K, V]] = None    # or: what the request in flight changes in it
        self._resend: set[K] = set()
        self.full_fetches = self.incremental_fetches = 0

    def plan(self, wanted: Mapping[K, V], changed: Optional[Iterable[K]] = None) -> FetchPlan[K, V]:
        """The next request for `wanted`. `changed`, if given, promises that
        `wanted` has the keys of the previous call and differs from it at most
        at those keys: the plan then costs O(changed), not O(wanted)."""
        in_session = self.session_id != INVALID_SESSION_ID and self.epoch != INITIAL_EPOCH
        if changed is not None and in_session and self._pending is not None:
            sent = self._sent
            keys, self._resend = itertools.chain(changed, self._resend), set()
            send = {k: wanted[k] for k in keys if k in wanted and sent.get(k) != wanted[k]}
            self._pending = None
            self._delta = send
            self.incremental_fetches += 1
            return FetchPlan(self.session_id, self.epoch, send, [])
        self._pending, self._delta, self._resend = dict(wanted), None, set()
        if not in_session:
            self.full_fetches += 1
            return FetchPlan(self.session_id, INITIAL_EPOCH, self._pending, [])
        sent = self._sent
        send = {k: v for k, v in self._pending.items() if sent.get(k) != v}
        forgotten = [k for k in sent if k not in self._pending]
        self.incremental_fetches += 1
        return FetchPlan(self.session_id, self.epoch, send, forgotten)

    def answered(self, plan: FetchPlan[K, V], error_code: int, session_id: int) -> bool:
        """Take in the answer's request-level error and session id. Returns
        False when the answer is a session error (its partitions, if any, are
        to be ignored and the next request is full)."""
        if error_code in SESSION_ERRORS:
            self._start_over()
            return False
        if plan.full:
            self.session_id = session_id
            self.epoch = next_epoch(INITIAL_EPOCH) if session_id != INVALID_SESSION_ID else INITIAL_EPOCH
        else:
            self.epoch = next_epoch(self.epoch)
        if self._delta is not None:
            self._sent.update(self._delta)
            self._delta = None
        else:
            self._sent = self._pending
        self._pending = self._sent  # what a plan with `changed` starts from
        return True

    def resend(self, key: K) -> None:
        """Name `key` in the next request even if its state is unchanged: its
        answer was an error, which the broker's session does not answer again
        by itself (the partition may be back by the time the caller retries)."""
        self._sent.pop(key, None)
        self._resend.add(key)

    def failed(self) -> None:
        """The request got no answer: the broker's session is in an unknown
        state. The next request is full, naming the session so that it closes."""
        self._start_over()

    def _start_over(self) -> None:
        self.epoch = INITIAL_EPOCH
        self._sent = {}
        self._pending = self._delta = None
