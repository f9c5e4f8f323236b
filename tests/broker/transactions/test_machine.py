"""The transaction coordinator's pure machine: every transition of the
protocol (docs/architecture.md section 18), its answers, and the requests
that must be refused."""
from __future__ import annotations

import itertools

import pytest

from broker.errors import Error
from broker.producer_ids import MAX_EPOCH
from broker.transactions.machine import TWO_PC_TIMEOUT_MS, MarkerJob, NeedProducerId, TxnConfig, TxnMachine
from broker.transactions.records import TxnState, decode_value, encode_value

T = "tx"
P0, P1 = ("t", 0), ("t", 1)


class Harness:
    """A machine whose fresh producer ids come from a counter, as the shell
    gets them: call, and on NeedProducerId call again with one. `now` is
    the monotonic clock; the wall clock reads the same plus `skew` (its jumps)."""

    def __init__(self, **config) -> None:
        self.m = TxnMachine(TxnConfig(**config))
        self.ids = itertools.count(1000)
        self.log: list = []
        self.skew = 0

    def _with_id(self, call):
        try:
            answer = call(None)
        except NeedProducerId:
            answer = call(next(self.ids))
        records = answer[-1]
        self.log += records
        return answer

    def wall(self, now: int) -> int:
        return now + self.skew

    def init(self, tid=T, timeout=60_000, now=0, **kw):
        answer, _ = self._with_id(lambda fresh: self.m.init_producer_id(tid, timeout, self.wall(now),
                                                                        fresh_producer_id=fresh, **kw))
        return answer

    def add(self, pid, epoch, parts=(P0,), now=0, tid=T):
        error, _, records = self.m.add_partitions(tid, pid, epoch, parts, now, wall_ms=self.wall(now))
        self.log += records
        return error

    def end(self, pid, epoch, committed, now=0, tid=T, keep_epoch=False):
        answer, _ = self._with_id(lambda fresh: self.m.end_txn(tid, pid, epoch, committed, self.wall(now),
                                                               fresh_producer_id=fresh, keep_epoch=keep_epoch))
        return answer

    def finish_markers(self, now=0) -> list[MarkerJob]:
        jobs = self.m.marker_jobs()
        for job in jobs:
            self.log += self.m.complete(job, self.wall(now))
        return jobs

    def abort_timed_out(self, now: int, tid=T) -> None:
        self.log += self.m.abort_timed_out(tid, now, wall_ms=self.wall(now))

    def state(self, tid=T) -> TxnState:
        return self.m.describe(tid).state

    def replayed(self) -> TxnMachine:
        """A machine built from the records written so far (as a new coordinator loads)."""
        other = TxnMachine(self.m.config)
        for tid, value in self.log:
            other.replay((tid, decode_value(encode_value(value))))
        return other


@pytest.fixture
def h() -> Harness:
    return Harness()


def begin(h: Harness, **kw):
    a = h.init(**kw)
    assert a.error == Error.NONE
    return a.producer_id, a.producer_epoch


def test_a_committed_transaction_end_to_end(h: Harness) -> None:
    pid, epoch = begin(h)
    assert (pid, epoch) == (1000, 0) and h.state() == TxnState.EMPTY
    error, _, records = h.m.add_partitions(T, pid, epoch, [P0, P1], now_ms=5, wall_ms=5)
    h.log += records
    assert error == Error.NONE and h.state() == TxnState.ONGOING and h.m.describe(T).start_ms == 5
    assert h.m.add_partitions(T, pid, epoch, [P0], 6, wall_ms=6)[2] == []  # already in it: nothing written
    answer = h.end(pid, epoch, True, now=7)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (Error.NONE, pid, 1)
    assert h.state() == TxnState.PREPARE_COMMIT
    [job] = h.finish_markers(now=8)
    assert job == MarkerJob(T, pid, 1, True, frozenset({P0, P1}))  # markers carry the bumped epoch
    assert h.state() == TxnState.COMPLETE_COMMIT and h.m.describe(T).partitions == frozenset()
    # The next transaction with the epoch EndTxn answered.
    assert h.add(pid, 1) == Error.NONE and h.state() == TxnState.ONGOING
    assert h.replayed().describe(T) == h.m.describe(T)


def test_while_markers_are_pending_everything_is_concurrent(h: Harness) -> None:
    pid, epoch = begin(h)
    h.add(pid, epoch)
    h.end(pid, epoch, False)
    assert h.state() == TxnState.PREPARE_ABORT
    assert h.add(pid, epoch + 1) == Error.CONCURRENT_TRANSACTIONS
    assert h.end(pid, epoch + 1, True).error == Error.CONCURRENT_TRANSACTIONS
    assert h.init().error == Error.CONCURRENT_TRANSACTIONS
    h.finish_markers()
    assert h.add(pid, epoch + 1) == Error.NONE


@pytest.mark.parametrize("committed", [True, False])
def test_a_retried_end_txn_answers_the_current_epoch(h: Harness, committed: bool) -> None:
    pid, epoch = begin(h)
    h.add(pid, epoch)
    first = h.end(pid, epoch, committed)
    again = h.end(pid, epoch, committed)  # markers still pending
    assert again == first and again.error == Error.NONE
    h.finish_markers()
    assert h.end(pid, epoch, committed) == first  # and once complete
    other = h.end(pid, epoch, not committed)
    assert other.error == Error.INVALID_TXN_STATE


def test_a_timeout_aborts_and_the_producer_learns_it() -> None:
    h = Harness()
    pid, epoch = begin(h, timeout=1000)
    h.add(pid, epoch, now=100)
    assert h.m.next_deadline(100, 100) == 1100
    assert h.m.timed_out(1099) == [] and h.m.timed_out(1100) == [T]
    h.abort_timed_out(1100)
    assert h.state() == TxnState.PREPARE_ABORT and h.m.describe(T).producer_epoch == epoch + 1
    assert h.add(pid, epoch, [P1]) == Error.TRANSACTION_ABORTABLE
    assert h.end(pid, epoch, True).error == Error.TRANSACTION_ABORTABLE
    assert h.m.verify(T, pid, epoch, [P0]) == {P0: Error.TRANSACTION_ABORTABLE}
    h.finish_markers()
    assert h.end(pid, epoch, True).error == Error.TRANSACTION_ABORTABLE
    abort = h.end(pid, epoch, False)
    assert (abort.error, abort.producer_epoch) == (Error.NONE, epoch + 1)
    assert h.add(pid, epoch + 1) == Error.NONE  # and it carries on


def test_zombies_are_fenced(h: Harness) -> None:
    pid, epoch = begin(h)
    for _ in range(3):
        h.add(pid, epoch)
        epoch = h.end(pid, epoch, True).producer_epoch
        h.finish_markers()
    assert epoch == 3
    assert h.add(pid, 1) == Error.PRODUCER_FENCED
    assert h.end(pid, 0, True).error == Error.PRODUCER_FENCED
    assert h.add(pid, 7) == Error.PRODUCER_FENCED  # an epoch from the future
    assert h.add(pid + 1, epoch) == Error.INVALID_PRODUCER_ID_MAPPING
    assert h.add(pid, 2) == Error.PRODUCER_FENCED  # the epoch before, after a commit


def test_init_producer_id_fences_the_previous_producer_and_aborts_its_transaction(h: Harness) -> None:
    pid, epoch = begin(h)
    h.add(pid, epoch, [P0, P1])
    second = h.init()
    assert second.error == Error.CONCURRENT_TRANSACTIONS and h.state() == TxnState.PREPARE_ABORT
    assert h.end(pid, epoch, True).error == Error.PRODUCER_FENCED
    assert h.end(pid, epoch, False).error == Error.PRODUCER_FENCED
    [job] = h.finish_markers()
    assert not job.committed and job.producer_epoch == epoch + 1
    again = h.init()
    assert (again.error, again.producer_id, again.producer_epoch) == (Error.NONE, pid, epoch + 2)
    assert h.add(pid, epoch) == Error.PRODUCER_FENCED


def test_init_producer_id_on_an_idle_id_bumps_the_epoch(h: Harness) -> None:
    pid, epoch = begin(h)
    a = h.init(timeout=5000)
    assert (a.producer_id, a.producer_epoch) == (pid, epoch + 1) and h.m.describe(T).timeout_ms == 5000
    # KIP-360 with the id: the current producer may ask; another epoch may not.
    assert h.init(producer_id=pid, producer_epoch=epoch + 1).producer_epoch == epoch + 2
    assert h.init(producer_id=pid, producer_epoch=epoch).error == Error.PRODUCER_FENCED


@pytest.mark.parametrize("timeout", [0, -1, 900_001])
def test_a_timeout_out_of_range_is_refused(h: Harness, timeout: int) -> None:
    a = h.init(timeout=timeout)
    assert a.error == Error.INVALID_TRANSACTION_TIMEOUT and h.m.describe(T) is None


def test_the_maximum_timeout_is_a_setting() -> None:
    h = Harness(max_timeout_ms=10)
    assert h.init(timeout=11).error == Error.INVALID_TRANSACTION_TIMEOUT
    assert h.init(timeout=10).error == Error.NONE


def test_requests_for_an_unknown_id(h: Harness) -> None:
    assert h.add(5, 0) == Error.INVALID_PRODUCER_ID_MAPPING
    assert h.end(5, 0, True).error == Error.INVALID_PRODUCER_ID_MAPPING
    assert h.m.verify("nope", 5, 0, [P0]) == {P0: Error.INVALID_PRODUCER_ID_MAPPING}
    assert h.log == []


def test_end_txn_with_nothing_open(h: Harness) -> None:
    pid, epoch = begin(h)
    assert h.end(pid, epoch, True).error == Error.INVALID_TXN_STATE
    abort = h.end(pid, epoch, False)  # transaction version 2: an empty abort bumps the epoch, no markers
    assert (abort.error, abort.producer_epoch) == (Error.NONE, epoch + 1) and h.m.marker_jobs() == []
    assert h.state() == TxnState.COMPLETE_ABORT


def test_an_exhausted_epoch_rotates_the_producer_id(h: Harness) -> None:
    pid, _ = begin(h)
    h.m.replay((T, h.m.describe(T).replace(producer_epoch=MAX_EPOCH - 1)))
    h.add(pid, MAX_EPOCH - 1)
    answer = h.end(pid, MAX_EPOCH - 1, True)
    assert (answer.producer_id, answer.producer_epoch) == (1001, 0)
    v = h.m.describe(T)
    assert (v.producer_id, v.producer_epoch, v.next_producer_id) == (pid, MAX_EPOCH, 1001)
    [job] = h.finish_markers()
    assert (job.producer_id, job.producer_epoch) == (pid, MAX_EPOCH)
    v = h.m.describe(T)
    assert (v.producer_id, v.producer_epoch, v.previous_producer_id) == (1001, 0, pid)
    assert h.end(pid, MAX_EPOCH - 1, True) == answer  # the retry, with the old id
    assert h.add(1001, 0) == Error.NONE
    assert h.replayed().describe(T) == h.m.describe(T)


def test_an_exhausted_epoch_at_init_gets_a_new_id(h: Harness) -> None:
    pid, _ = begin(h)
    h.m.replay((T, h.m.describe(T).replace(producer_epoch=MAX_EPOCH - 1)))
    a = h.init()
    assert (a.producer_id, a.producer_epoch) == (1001, 0)


def test_verification(h: Harness) -> None:
    pid, epoch = begin(h)
    assert h.m.verify(T, pid, epoch, [P0]) == {P0: Error.INVALID_TXN_STATE}  # no transaction yet
    h.add(pid, epoch, [P0])
    assert h.m.verify(T, pid, epoch, [P0, P1]) == {P0: Error.NONE, P1: Error.INVALID_TXN_STATE}
    assert h.m.verify(T, pid, epoch - 1, [P0]) == {P0: Error.PRODUCER_FENCED}
    h.end(pid, epoch, True)
    assert h.m.verify(T, pid, epoch + 1, [P0]) == {P0: Error.INVALID_TXN_STATE}  # ended: a late batch


def test_two_phase_commit_keeps_a_prepared_transaction() -> None:
    h = Harness(max_timeout_ms=1000)
    a = h.init(timeout=10 ** 9, enable_2pc=True)  # the timeout is not checked: it never applies
    assert a.error == Error.NONE and h.m.describe(T).timeout_ms == TWO_PC_TIMEOUT_MS
    pid, epoch = a.producer_id, a.producer_epoch
    h.add(pid, epoch, [P0], now=0)
    assert h.m.timed_out(10 ** 12) == [] and h.m.next_deadline(0, 0) is None
    kept = h.init(enable_2pc=True, keep_prepared_txn=True)
    assert (kept.producer_id, kept.producer_epoch, kept.ongoing_producer_id, kept.ongoing_producer_epoch) == (
        pid, epoch + 1, pid, epoch)
    assert h.state() == TxnState.ONGOING
    assert h.end(pid, epoch, True).error == Error.PRODUCER_FENCED  # the old producer
    commit = h.end(pid, epoch + 1, True)
    assert commit.error == Error.NONE and commit.producer_epoch == epoch + 2
    [job] = h.finish_markers()
    assert job.committed and job.partitions == frozenset({P0})


def test_keep_prepared_needs_two_phase_commit(h: Harness) -> None:
    assert h.init(keep_prepared_txn=True).error == Error.INVALID_REQUEST


def test_idle_ids_expire_with_a_tombstone() -> None:
    h = Harness(id_expiration_ms=1000)
    pid, epoch = begin(h, now=0)
    h.add(pid, epoch, now=10)
    assert h.m.expire_ids(5000) == []  # an open transaction keeps the id
    h.end(pid, epoch, True, now=20)
    h.finish_markers(now=30)
    assert h.m.next_deadline(30, 30) == 1030
    assert h.m.expire_ids(1029) == []
    assert h.m.expire_ids(1030) == [(T, None)]
    assert h.m.describe(T) is None
    again = h.init(now=2000)
    assert again.producer_id != pid  # a new producer id for a new id


def test_complete_of_a_superseded_job_writes_nothing(h: Harness) -> None:
    pid, epoch = begin(h)
    h.add(pid, epoch)
    h.end(pid, epoch, True)
    [job] = h.m.marker_jobs()
    h.log += h.m.complete(job, 0)
    assert h.m.complete(job, 0) == []


def test_describe_and_list(h: Harness) -> None:
    pid, epoch = begin(h, now=0)
    h.add(pid, epoch, now=100)
    begin(h, tid="other")
    assert [t for t, _ in h.m.list((), (), 0, 200)] == ["other", T]
    assert [t for t, _ in h.m.list((TxnState.ONGOING,), (), 0, 200)] == [T]
    assert [t for t, _ in h.m.list((), (pid,), 0, 200)] == [T]
    assert h.m.list((), (), 100, 200) == []
    assert [t for t, _ in h.m.list((), (), 99, 200)] == [T]


# -- transaction version 1 (Kafka clients before KIP-890's second part) ---------------------

def test_version_1_ends_without_a_bump_and_the_producer_carries_on_with_its_epoch():
    h = Harness()
    a = h.init()
    assert h.add(a.producer_id, a.producer_epoch) == Error.NONE
    ended = h.end(a.producer_id, a.producer_epoch, True, keep_epoch=True)
    assert (ended.error, ended.producer_id, ended.producer_epoch) == (Error.NONE, a.producer_id, a.producer_epoch)
    assert h.add(a.producer_id, a.producer_epoch) == Error.CONCURRENT_TRANSACTIONS  # markers not written yet
    (job,) = h.finish_markers()
    assert job.keep_epoch and job.producer_epoch == a.producer_epoch
    # a retried EndTxn of the same result succeeds, the other one is refused
    assert h.end(a.producer_id, a.producer_epoch, True, keep_epoch=True).error == Error.NONE
    assert h.end(a.producer_id, a.producer_epoch, False, keep_epoch=True).error == Error.INVALID_TXN_STATE
    # the next transaction, same epoch, aborted
    assert h.add(a.producer_id, a.producer_epoch, (P1,)) == Error.NONE
    assert h.end(a.producer_id, a.producer_epoch, False, keep_epoch=True).error == Error.NONE
    (job,) = h.finish_markers()
    assert (job.committed, job.keep_epoch, job.producer_epoch) == (False, True, a.producer_epoch)
    assert h.state() == TxnState.COMPLETE_ABORT
    # the log says so: replayed, the marker job of a version 1 Prepare* keeps its epoch
    replayed = TxnMachine()
    for tid, value in h.log:
        replayed.replay((tid, None if value is None else decode_value(encode_value(value))))
    assert replayed.describe(T).client_transaction_version == 1


def test_version_1_refuses_an_abort_with_nothing_open_and_a_bumped_epoch():
    h = Harness(max_timeout_ms=1000)
    a = h.init(timeout=1000)
    assert h.end(a.producer_id, a.producer_epoch, False, keep_epoch=True).error == Error.INVALID_TXN_STATE
    assert h.add(a.producer_id, a.producer_epoch, now=0) == Error.NONE
    h.abort_timed_out(5000)  # the coordinator's timeout bumps the epoch, as in Kafka
    (job,) = h.finish_markers()
    assert not job.keep_epoch and job.producer_epoch == a.producer_epoch + 1
    assert h.end(a.producer_id, a.producer_epoch, False, keep_epoch=True).error == Error.PRODUCER_FENCED


# -- two clocks: the timeout on the monotonic one, what is written on the wall one ---------

HOUR = 3_600_000


@pytest.mark.parametrize("jump", [HOUR, -HOUR])
def test_a_wall_clock_jump_neither_aborts_early_nor_keeps_a_transaction_open_late(jump: int) -> None:
    h = Harness()
    pid, epoch = begin(h, timeout=1000)
    h.add(pid, epoch, now=100)
    assert h.m.describe(T).start_ms == 100  # written: the wall clock, then unskewed
    h.skew = jump  # the coordinator's wall clock jumps an hour between two calls
    assert h.m.next_deadline(500, h.wall(500)) == 1100
    assert h.m.timed_out(1099) == [] and h.m.abort_timed_out(T, 1099, wall_ms=h.wall(1099)) == []
    assert h.add(pid, epoch, (P1,), now=1099) == Error.NONE and h.state() == TxnState.ONGOING
    assert h.m.timed_out(1100) == [T]  # a whole timeout passed on the monotonic clock
    h.abort_timed_out(1100)
    assert h.state() == TxnState.PREPARE_ABORT and h.m.describe(T).last_update_ms == 1100 + jump


def test_a_transaction_begun_after_a_jump_writes_the_skewed_start_and_times_out_on_the_monotonic_clock() -> None:
    h = Harness()
    pid, epoch = begin(h, timeout=1000)
    h.skew = -HOUR
    h.add(pid, epoch, now=100)
    assert h.m.describe(T).start_ms == 100 - HOUR
    assert h.m.timed_out(1099) == [] and h.m.timed_out(1100) == [T]


def _moved(h: Harness, now: int, wall: int, previous=None) -> TxnMachine:
    """The machine a coordinator builds from the log (`h.replayed()`), armed at `now` / `wall`."""
    moved = h.replayed()
    moved.arm_timers(now, wall, previous)
    return moved


def test_a_coordinator_that_loads_an_open_transaction_gives_it_what_its_start_time_leaves() -> None:
    h = Harness()
    pid, epoch = begin(h, timeout=1000)
    h.add(pid, epoch, now=100)  # written start: 100 on the old coordinator's wall clock
    # The new coordinator's monotonic clock has nothing to do with the old one's.
    moved = _moved(h, now=50_000, wall=400)
    assert moved.next_deadline(50_000, 400) == 50_700 and moved.timed_out(50_699) == []
    assert moved.timed_out(50_700) == [T]
    # Its wall clock an hour ahead: nothing left, aborted at once (as a wall-clock timeout would).
    assert _moved(h, now=50_000, wall=400 + HOUR).timed_out(50_000) == [T]
    # An hour behind: never more than the whole timeout from the load.
    behind = _moved(h, now=50_000, wall=400 - HOUR)
    assert behind.timed_out(50_999) == [] and behind.timed_out(51_000) == [T]


def test_a_reload_on_the_same_coordinator_keeps_the_deadlines_it_had() -> None:
    h = Harness()
    pid, epoch = begin(h, timeout=1000)
    h.add(pid, epoch, now=100)
    h.skew = HOUR  # the wall clock jumped before the reload: the monotonic deadline still stands
    reloaded = _moved(h, now=600, wall=h.wall(600), previous=h.m)
    assert reloaded.timed_out(1099) == [] and reloaded.timed_out(1100) == [T]
    # A previous machine without a deadline for it (its transaction not open there): from the start time.
    other = Harness()
    begin(other, timeout=1000)
    assert _moved(h, now=600, wall=h.wall(600), previous=other.m).timed_out(600) == [T]


def test_id_expiration_is_a_calendar_rule_on_the_wall_clock() -> None:
    h = Harness(id_expiration_ms=10 * HOUR)
    pid, epoch = begin(h, now=0)
    h.add(pid, epoch, now=10)
    h.end(pid, epoch, True, now=20)
    h.finish_markers(now=30)  # last update: 30 on the wall clock
    # Asked at monotonic 1000 with the wall clock at 30 + HOUR: nine hours left, on the monotonic clock.
    assert h.m.next_deadline(1000, 30 + HOUR) == 1000 + 9 * HOUR
    assert h.m.expire_ids(30 + 10 * HOUR - 1) == [] and h.m.expire_ids(30 + 10 * HOUR) == [(T, None)]
