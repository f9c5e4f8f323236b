"""The transaction coordinator's decisions for the transactional ids of one
__transaction_state partition, without I/O: requests, the time and fresh
producer ids in; answers and the records to append out.

Time comes in on both of the node's clocks (partition_log/clock.py):
`now_ms` on the monotonic clock for the transaction timeout (each open
transaction's deadline, in memory; `next_deadline` is on that clock too),
`wall_ms` on the wall clock for what is written (the start and last-update
timestamps of the records) and for the calendar rules that read them, as
Kafka's: transactional.id.expiration.ms and ListTransactions' duration
filter. So a wall clock that jumps aborts no transaction early and keeps
none open past its timeout. A machine built from the log by a coordinator
the partition moved to has only the written start time: arm_timers turns
what it leaves of the timeout, read once from the wall clock and clamped to
[0, timeout], into a monotonic deadline (a reload on the same coordinator
keeps the deadlines it had).

Every state change is applied here when the request is decided, and its
record returned for the shell to append (acks=all) before it answers, as
the group machine does; a failed append makes the shell rebuild the machine
from the log by `replay`.

Transactions follow Kafka's transaction version 2 (KIP-890): EndTxn bumps
the epoch in the Prepare* record, the markers carry that epoch and the
producer continues with it; a producer whose epoch would pass 32766 gets a
new producer id with epoch 0 instead (NextProducerId in the Prepare*
record, the id rotated by the Complete* record). A fresh id comes from the
broker's allocator, which is asynchronous: a decision that needs one raises
`NeedProducerId`, and the shell calls again with `fresh_producer_id` set.

Kafka clients that predate KIP-890's second part (EndTxn below v5, over
the Kafka listener) run transaction version 1 (EndTxn's keep_epoch): the
Prepare* record keeps the epoch, the markers carry it, the producer carries
on with it, and the record says ClientTransactionVersion 1 so the markers
(MarkerJob.keep_epoch) tell the partitions not to expect a bump.

Epochs of a request against the id's current epoch E:
    E          the current producer
    E - 1      the epoch the last transaction ended (a retried EndTxn, or a
               producer whose transaction the coordinator aborted on timeout:
               TRANSACTION_ABORTABLE), or a fenced producer (PRODUCER_FENCED)
    otherwise  PRODUCER_FENCED (a zombie)
Who ended the last transaction (the client, the timeout, a new producer's
InitProducerId) is kept in memory only; after a coordinator move an ended
epoch is treated as the client's own (INVALID_TXN_STATE / PRODUCER_FENCED),
both of which also make the producer abort or stop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Collection, Iterable, Optional

from kafka_protocol.batch import epoch_exhausted

from ..errors import Error
from ..producer_ids import MAX_EPOCH
from .records import NO_PRODUCER_ID, TRANSACTION_VERSION_2, Record, TopicPartition, TxnState, TxnValue

# KIP-939: the timeout stored for an id whose transactions may stay prepared
# (enable_2pc): the timer never aborts them.
TWO_PC_TIMEOUT_MS = 2**31 - 1
PREPARE = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE)
COMPLETE = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
IDLE = (TxnState.EMPTY, *COMPLETE)
TRANSACTION_VERSION_1 = 1  # no epoch bump at EndTxn (EndTxnRequest.keep_epoch)


class TxnError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


class NeedProducerId(Exception):
    """The decision needs a fresh producer id: call again with one."""


class EndedBy(Enum):
    CLIENT = "client"
    TIMEOUT = "timeout"
    FENCE = "fence"  # InitProducerId of a new producer aborted it


@dataclass(frozen=True)
class TxnConfig:
    max_timeout_ms: int = 900_000                 # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000           # transactional.id.expiration.ms


@dataclass(frozen=True, slots=True)
class ProducerAnswer:
    """InitProducerId's and EndTxn's answer."""

    error: int = Error.NONE
    message: str = ""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    ongoing_producer_id: int = NO_PRODUCER_ID
    ongoing_producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class MarkerJob:
    """The markers a Prepare* record calls for."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    partitions: frozenset[TopicPartition]
    keep_epoch: bool = False  # transaction version 1: the markers carry the data's epoch


def _times_out(v: TxnValue) -> bool:
    """An open transaction that transaction.timeout.ms applies to (never an enable_2pc id's)."""
    return v.state == TxnState.ONGOING and v.timeout_ms != TWO_PC_TIMEOUT_MS


@dataclass(slots=True)
class Txn:
    value: TxnValue
    ended_by: EndedBy = EndedBy.CLIENT  # in memory only, see the module's docstring
    # The open transaction's timeout on the monotonic clock (in memory only;
    # None when not open, or loaded and not yet armed).
    deadline_ms: Optional[int] = None


@dataclass
class TxnMachine:
    config: TxnConfig = field(default_factory=TxnConfig)
    txns: dict[str, Txn] = field(default_factory=dict)

    # -- the log -------------------------------------------------------------------------------
    def replay(self, record: Record) -> None:
        tid, value = record
        if value is None:
            self.txns.pop(tid, None)
        else:
            txn = self.txns.get(tid)
            if txn is None:
                self.txns[tid] = Txn(value)
            else:
                txn.value = value

    def _set(self, tid: str, value: Optional[TxnValue], ended_by: Optional[EndedBy] = None) -> list[Record]:
        self.replay((tid, value))
        if ended_by is not None:
            self.txns[tid].ended_by = ended_by
        return [(tid, value)]

    # -- producers -----------------------------------------------------------------------------
    def _producer(self, tid: str, pid: int, epoch: int) -> tuple[Txn, bool]:
        """The id's state and whether `epoch` is the one its last transaction
        ended with (True) or the current one (False); else raises."""
        txn = self.txns.get(tid)
        if txn is None or txn.value.state == TxnState.DEAD:
            raise TxnError(Error.INVALID_PRODUCER_ID_MAPPING, f"transactional id {tid!r} has no producer id; "
                                                              "InitProducerId first")
        v = txn.value
        rotated_retry = (pid == v.previous_producer_id and pid != NO_PRODUCER_ID and epoch == MAX_EPOCH - 1
                         and v.producer_epoch == 0)
        if pid != v.producer_id and not rotated_retry:
            raise TxnError(Error.INVALID_PRODUCER_ID_MAPPING, f"producer id {pid} is not the one of {tid!r}")
        if not rotated_retry and epoch == v.producer_epoch:
            return txn, False
        if rotated_retry or epoch == v.producer_epoch - 1:
            return txn, True
        raise TxnError(Error.PRODUCER_FENCED, f"epoch {epoch} of {tid!r} is fenced (current {v.producer_epoch})")

    @staticmethod
    def _ended_epoch_error(txn: Txn, what: str) -> TxnError:
        if txn.ended_by == EndedBy.TIMEOUT and txn.value.state in (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT):
            return TxnError(Error.TRANSACTION_ABORTABLE, f"{what}: the coordinator aborted the transaction "
                                                         "on its timeout; abort and begin again")
        return TxnError(Error.PRODUCER_FENCED, f"{what}: the producer's epoch has ended")

    @staticmethod
    def _answer(v: TxnValue) -> ProducerAnswer:
        """The producer id and epoch a producer carries on with."""
        if v.next_producer_id != NO_PRODUCER_ID:
            return ProducerAnswer(producer_id=v.next_producer_id, producer_epoch=0)
        return ProducerAnswer(producer_id=v.producer_id, producer_epoch=v.producer_epoch)

    @staticmethod
    def _bumped(v: TxnValue, fresh: Optional[int]) -> TxnValue:
        """The epoch + 1 outside a transaction; a new producer id at epoch 0 once exhausted."""
        if not epoch_exhausted(v.producer_epoch):
            return v.replace(producer_epoch=v.producer_epoch + 1, previous_producer_id=NO_PRODUCER_ID,
                             next_producer_id=NO_PRODUCER_ID)
        if fresh is None:
            raise NeedProducerId()
        return v.replace(producer_id=fresh, producer_epoch=0, previous_producer_id=v.producer_id,
                         next_producer_id=NO_PRODUCER_ID)

    def _prepare(self, tid: str, txn: Txn, committed: bool, wall_ms: int, fresh: Optional[int],
                 ended_by: EndedBy, *, keep_epoch: bool = False) -> list[Record]:
        """Ongoing -> Prepare*, the epoch bumped (to 32767 with a next producer id once exhausted);
        with keep_epoch (transaction version 1) the epoch stays."""
        v = txn.value
        state = TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT
        if keep_epoch:
            return self._set(tid, v.replace(state=state, next_producer_id=NO_PRODUCER_ID, last_update_ms=wall_ms,
                                            client_transaction_version=TRANSACTION_VERSION_1), ended_by)
        next_pid = NO_PRODUCER_ID
        if epoch_exhausted(v.producer_epoch):
            if fresh is None:
                raise NeedProducerId()
            next_pid = fresh
        return self._set(tid, v.replace(state=state, producer_epoch=v.producer_epoch + 1,
                                        next_producer_id=next_pid, last_update_ms=wall_ms,
                                        client_transaction_version=TRANSACTION_VERSION_2), ended_by)

    # -- requests ------------------------------------------------------------------------------
    def init_producer_id(self, tid: str, timeout_ms: int, wall_ms: int, *, producer_id: int = NO_PRODUCER_ID,
                         producer_epoch: int = -1, enable_2pc: bool = False, keep_prepared_txn: bool = False,
                         fresh_producer_id: Optional[int] = None) -> tuple[ProducerAnswer, list[Record]]:
        """`wall_ms`: the wall clock, written as the last update (no deadline starts here)."""
        try:
            return self._init_producer_id(tid, timeout_ms, wall_ms, producer_id, producer_epoch, enable_2pc,
                                          keep_prepared_txn, fresh_producer_id)
        except TxnError as exc:
            return ProducerAnswer(error=exc.code, message=exc.message), []

    def _init_producer_id(self, tid: str, timeout_ms: int, wall_ms: int, pid: int, epoch: int, enable_2pc: bool,
                          keep_prepared: bool, fresh: Optional[int]) -> tuple[ProducerAnswer, list[Record]]:
        if keep_prepared and not enable_2pc:
            raise TxnError(Error.INVALID_REQUEST, "keep_prepared_txn needs enable_2pc (KIP-939)")
        if enable_2pc:
            timeout_ms = TWO_PC_TIMEOUT_MS
        elif not 0 < timeout_ms <= self.config.max_timeout_ms:
            raise TxnError(Error.INVALID_TRANSACTION_TIMEOUT, f"transaction timeout {timeout_ms} ms: expected "
                           f"1 to transaction.max.timeout.ms ({self.config.max_timeout_ms})")
        txn = self.txns.get(tid)
        if txn is None or txn.value.state == TxnState.DEAD:
            if fresh is None:
                raise NeedProducerId()
            value = TxnValue(fresh, 0, timeout_ms, TxnState.EMPTY, last_update_ms=wall_ms)
            return ProducerAnswer(producer_id=fresh, producer_epoch=0), self._set(tid, value, EndedBy.CLIENT)
        v = txn.value
        if pid != NO_PRODUCER_ID and (pid, epoch) != (v.producer_id, v.producer_epoch) and not (
                pid == v.previous_producer_id and v.producer_epoch == 0):
            raise TxnError(Error.PRODUCER_FENCED, f"producer id {pid} epoch {epoch} is not the current producer "
                                                  f"of {tid!r}")
        if v.state in PREPARE:
            raise TxnError(Error.CONCURRENT_TRANSACTIONS, f"the last transaction of {tid!r} is being completed")
        if v.state == TxnState.ONGOING:
            if keep_prepared and not epoch_exhausted(v.producer_epoch):
                # KIP-939: the open transaction stays, for the new producer (new epoch) to end.
                kept = v.replace(producer_epoch=v.producer_epoch + 1, timeout_ms=timeout_ms, last_update_ms=wall_ms)
                answer = ProducerAnswer(producer_id=v.producer_id, producer_epoch=kept.producer_epoch,
                                        ongoing_producer_id=v.producer_id, ongoing_producer_epoch=v.producer_epoch)
                return answer, self._set(tid, kept, EndedBy.FENCE)
            # The previous producer's transaction is aborted (its epoch fenced by the
            # bump); the caller retries once the markers are written.
            records = self._prepare(tid, txn, False, wall_ms, fresh, EndedBy.FENCE)
            return ProducerAnswer(error=Error.CONCURRENT_TRANSACTIONS, message=f"aborting the open transaction "
                                  f"of {tid!r} first"), records
        value = self._bumped(v, fresh).replace(state=TxnState.EMPTY, partitions=frozenset(), timeout_ms=timeout_ms,
                                               last_update_ms=wall_ms, start_ms=-1)
        return self._answer(value), self._set(tid, value, EndedBy.FENCE)

    def add_partitions(self, tid: str, pid: int, epoch: int, partitions: Iterable[TopicPartition],
                       now_ms: int, *, wall_ms: int) -> tuple[int, str, list[Record]]:
        """(error for every partition, message, records). A transaction
        begun here times out transaction.timeout.ms after `now_ms` (the
        monotonic clock); `wall_ms` is written as its start time."""
        try:
            txn, ended = self._producer(tid, pid, epoch)
            if ended:
                raise self._ended_epoch_error(txn, "AddPartitionsToTxn")
            v = txn.value
            if v.state in PREPARE:
                raise TxnError(Error.CONCURRENT_TRANSACTIONS, "the last transaction is being completed")
            added = frozenset(partitions)
            if v.state == TxnState.ONGOING:
                if added <= v.partitions:
                    return Error.NONE, "", []
                return Error.NONE, "", self._set(tid, v.replace(partitions=v.partitions | added,
                                                                last_update_ms=wall_ms))
            records = self._set(tid, v.replace(
                state=TxnState.ONGOING, partitions=added, start_ms=wall_ms, last_update_ms=wall_ms,
                previous_producer_id=NO_PRODUCER_ID, next_producer_id=NO_PRODUCER_ID), EndedBy.CLIENT)
            txn.deadline_ms = now_ms + v.timeout_ms
            return Error.NONE, "", records
        except TxnError as exc:
            return exc.code, exc.message, []

    def verify(self, tid: str, pid: int, epoch: int, partitions: Collection[TopicPartition],
               ) -> dict[TopicPartition, int]:
        """KIP-890: is each partition in the producer's ongoing transaction? NONE when it is."""
        try:
            txn, ended = self._producer(tid, pid, epoch)
            if ended:
                raise self._ended_epoch_error(txn, "verification")
        except TxnError as exc:
            return {tp: exc.code for tp in partitions}
        v = txn.value
        ongoing = v.state == TxnState.ONGOING
        return {tp: Error.NONE if ongoing and tp in v.partitions else Error.INVALID_TXN_STATE for tp in partitions}

    def end_txn(self, tid: str, pid: int, epoch: int, committed: bool, wall_ms: int, *,
                fresh_producer_id: Optional[int] = None, keep_epoch: bool = False
                ) -> tuple[ProducerAnswer, list[Record]]:
        try:
            txn, ended = self._producer(tid, pid, epoch)
            v = txn.value
            result = "commit" if committed else "abort"
            same = (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT) if committed else \
                (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)
            if keep_epoch:
                return self._end_txn_v1(tid, txn, ended, committed, wall_ms)
            if ended:
                if v.state in same and txn.ended_by != EndedBy.FENCE:
                    return self._answer(v), []  # a retried EndTxn, or the abort after a timeout
                if v.state in PREPARE or v.state in COMPLETE:
                    if txn.ended_by == EndedBy.TIMEOUT:
                        raise self._ended_epoch_error(txn, f"EndTxn({result})")
                    if txn.ended_by == EndedBy.FENCE:
                        raise TxnError(Error.PRODUCER_FENCED, "a newer producer of the id has fenced this one")
                    raise TxnError(Error.INVALID_TXN_STATE, f"EndTxn({result}) of a transaction that ended "
                                                            f"as {v.state.kafka_name}")
                raise TxnError(Error.PRODUCER_FENCED, f"epoch {epoch} of {tid!r} has ended")
            if v.state == TxnState.ONGOING:
                records = self._prepare(tid, txn, committed, wall_ms, fresh_producer_id, EndedBy.CLIENT)
                return self._answer(self.txns[tid].value), records
            if v.state in PREPARE:
                raise TxnError(Error.CONCURRENT_TRANSACTIONS, "the last transaction is being completed")
            if committed:
                raise TxnError(Error.INVALID_TXN_STATE, f"EndTxn(commit) with no open transaction "
                                                        f"({v.state.kafka_name})")
            # An abort with nothing open (as Kafka's transaction version 2): the
            # epoch is bumped all the same, no marker is needed.
            value = self._bumped(v, fresh_producer_id).replace(
                state=TxnState.COMPLETE_ABORT, partitions=frozenset(), last_update_ms=wall_ms)
            return self._answer(value), self._set(tid, value, EndedBy.CLIENT)
        except TxnError as exc:
            return ProducerAnswer(error=exc.code, message=exc.message), []

    def _end_txn_v1(self, tid: str, txn: Txn, ended: bool, committed: bool,
                    wall_ms: int) -> tuple[ProducerAnswer, list[Record]]:
        """EndTxn of transaction version 1, as Kafka's coordinator before
        KIP-890: the epoch stays, so the producer's epoch is always the
        current one; an ended one was bumped by a timeout or a new producer."""
        v = txn.value
        if ended:
            raise TxnError(Error.PRODUCER_FENCED, f"the epoch of {tid!r} was bumped past this producer's")
        if v.state == TxnState.ONGOING:
            records = self._prepare(tid, txn, committed, wall_ms, None, EndedBy.CLIENT, keep_epoch=True)
            return self._answer(self.txns[tid].value), records
        if v.state in PREPARE:
            raise TxnError(Error.CONCURRENT_TRANSACTIONS, "the last transaction is being completed")
        done = TxnState.COMPLETE_COMMIT if committed else TxnState.COMPLETE_ABORT
        if v.state == done:
            return self._answer(v), []  # a retried EndTxn
        raise TxnError(Error.INVALID_TXN_STATE, f"EndTxn({'commit' if committed else 'abort'}) with no open "
                                                f"transaction ({v.state.kafka_name})")

    # -- markers -------------------------------------------------------------------------------
    @staticmethod
    def marker_job(record: Record) -> Optional[MarkerJob]:
        """The markers a written record calls for (a Prepare* with partitions), else None."""
        tid, v = record
        if v is None or v.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return None
        return MarkerJob(tid, v.producer_id, v.producer_epoch, v.state == TxnState.PREPARE_COMMIT, v.partitions,
                         keep_epoch=v.client_transaction_version == TRANSACTION_VERSION_1)

    def marker_jobs(self) -> list[MarkerJob]:
        """Every transaction whose markers are still to be written (after a load)."""
        jobs = (self.marker_job((tid, txn.value)) for tid, txn in sorted(self.txns.items()))
        return [job for job in jobs if job is not None]

    def complete(self, job: MarkerJob, wall_ms: int) -> list[Record]:
        """Every marker of `job` is written: Prepare* -> Complete*, the producer id
        rotated when the epoch was exhausted. Nothing when the id moved on."""
        txn = self.txns.get(job.transactional_id)
        if txn is None or self.marker_job((job.transactional_id, txn.value)) != job:
            return []
        v = txn.value
        done = v.replace(state=TxnState.COMPLETE_COMMIT if job.committed else TxnState.COMPLETE_ABORT,
                         partitions=frozenset(), last_update_ms=wall_ms)
        if v.next_producer_id != NO_PRODUCER_ID:
            done = done.replace(producer_id=v.next_producer_id, producer_epoch=0, previous_producer_id=v.producer_id,
                                next_producer_id=NO_PRODUCER_ID)
        return self._set(job.transactional_id, done)

    # -- time ----------------------------------------------------------------------------------
    def arm_timers(self, now_ms: int, wall_ms: int, previous: Optional["TxnMachine"] = None) -> None:
        """After loading: the deadline of every open transaction, on the
        monotonic clock. One the `previous` machine of this coordinator
        timed (a reload of the same shard) keeps its deadline. Otherwise the
        log has only the written start time, on some coordinator's wall
        clock: what it leaves of the timeout is read once from this wall
        clock, clamped to [0, timeout] (a wall clock ahead aborts at once,
        one behind gives at most a whole timeout, never more), and runs on
        the monotonic clock from then on."""
        for tid, txn in self.txns.items():
            v = txn.value
            if not _times_out(v):
                continue
            old = previous.txns.get(tid) if previous is not None else None
            if (old is not None and old.deadline_ms is not None and old.value.state == TxnState.ONGOING
                    and (old.value.producer_id, old.value.producer_epoch, old.value.start_ms)
                    == (v.producer_id, v.producer_epoch, v.start_ms)):
                txn.deadline_ms = old.deadline_ms
            else:
                txn.deadline_ms = now_ms + min(max(v.start_ms + v.timeout_ms - wall_ms, 0), v.timeout_ms)

    def timed_out(self, now_ms: int) -> list[str]:
        """Ongoing transactions past their timeout (never those of enable_2pc ids)."""
        return sorted(tid for tid, txn in self.txns.items() if self._expired_txn(txn, now_ms))

    @staticmethod
    def _expired_txn(txn: Txn, now_ms: int) -> bool:
        return _times_out(txn.value) and txn.deadline_ms is not None and txn.deadline_ms <= now_ms

    def abort_timed_out(self, tid: str, now_ms: int, *, wall_ms: int,
                        fresh_producer_id: Optional[int] = None) -> list[Record]:
        txn = self.txns.get(tid)
        if txn is None or not self._expired_txn(txn, now_ms):
            return []
        return self._prepare(tid, txn, False, wall_ms, fresh_producer_id, EndedBy.TIMEOUT)

    def expire_ids(self, wall_ms: int) -> list[Record]:
        """Tombstones for ids idle longer than transactional.id.expiration.ms:
        a calendar rule on the written last-update time, as Kafka's."""
        gone = sorted(tid for tid, txn in self.txns.items() if txn.value.state in IDLE
                      and txn.value.last_update_ms + self.config.id_expiration_ms <= wall_ms)
        return [record for tid in gone for record in self._set(tid, None)]

    def next_deadline(self, now_ms: int, wall_ms: int) -> Optional[int]:
        """When the timer should look again, on the monotonic clock: the
        first transaction timeout, or the first id expiration (a wall-clock
        time, as far from `now_ms` as it is from `wall_ms`)."""
        deadlines = [t.deadline_ms for t in self.txns.values() if _times_out(t.value) and t.deadline_ms is not None]
        expiry = min((t.value.last_update_ms + self.config.id_expiration_ms for t in self.txns.values()
                      if t.value.state in IDLE), default=None)
        if expiry is not None:
            deadlines.append(now_ms + max(expiry - wall_ms, 0))
        return min(deadlines, default=None)

    # -- reads ---------------------------------------------------------------------------------
    def describe(self, tid: str) -> Optional[TxnValue]:
        txn = self.txns.get(tid)
        return None if txn is None else txn.value

    def list(self, states: Collection[TxnState], producer_ids: Collection[int], duration_ms: int,
             wall_ms: int) -> list[tuple[str, TxnValue]]:
        """ListTransactions' filters: any of the states, any of the producer ids
        (empty: any), open longer than duration_ms (> 0) by the wall clock
        (the written start time, as Kafka's)."""
        found = []
        for tid, txn in sorted(self.txns.items()):
            v = txn.value
            if states and v.state not in states:
                continue
            if producer_ids and v.producer_id not in producer_ids:
                continue
            if duration_ms > 0 and (v.state != TxnState.ONGOING or wall_ms - v.start_ms <= duration_ms):
                continue
            found.append((tid, v))
        return found
