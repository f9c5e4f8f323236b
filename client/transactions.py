"""A transactional producer's side of KIP-98, without I/O: Kafka's
TransactionManager states and transitions, the partitions of the open
transaction, and what each error of each transactional request means.

    UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION
        -> COMMITTING_TRANSACTION | ABORTING_TRANSACTION -> READY
    KIP-939 (two-phase commit): IN_TRANSACTION -> PREPARED_TRANSACTION
        (prepare_transaction: flushed, still open), and INITIALIZING ->
        PREPARED_TRANSACTION (init_transactions(keep_prepared_txn=True) found
        an open transaction); only commit, abort or complete leave it
    any -> ABORTABLE_ERROR (only abort_transaction() leaves it)
    any -> FATAL_ERROR (nothing leaves it: close the producer)

The requests themselves are sent by client/txn_requests.py; the producer
(client/producer.py) calls the methods here from its event loop only, so
there is no lock. Each answer is judged by `outcome(request, code)`:
RETRY (the same request again after a backoff: the coordinator is loading or
still writing the previous transaction's markers), FIND_COORDINATOR (the
coordinator moved: look it up, then retry), ABORTABLE (the transaction
cannot commit: the application aborts it and carries on) or FATAL (fenced,
not authorized, a state the coordinator refuses: the producer is done).
The tables follow Kafka's TransactionManager handlers, with kraftlog's
choices said where they differ.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Optional

from kafka_protocol.errors import Errors, error_message

from .errors import KafkaErrorInfo, KafkaException

TopicPartition = tuple[str, int]
# Kafka's TransactionManager.ADD_PARTITIONS_RETRY_BACKOFF_MS: a transaction's
# first AddPartitionsToTxn, refused with CONCURRENT_TRANSACTIONS, is retried
# this soon (also for a request-level refusal: client/txn_requests.py).
ADD_PARTITIONS_RETRY_BACKOFF_S = 0.02


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    PREPARED_TRANSACTION = "PREPARED_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


S = TxnState
# Kafka's State.isTransitionValid: the states each state may be entered from.
ENTERED_FROM: dict[TxnState, frozenset[TxnState]] = {
    S.UNINITIALIZED: frozenset(),
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.PREPARED_TRANSACTION: frozenset({S.IN_TRANSACTION, S.INITIALIZING}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.PREPARED_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR, S.PREPARED_TRANSACTION}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR,
                                  S.INITIALIZING}),
    S.FATAL_ERROR: frozenset(TxnState),  # from anywhere
}


@dataclass(frozen=True)
class PreparedTxnState:
    """KIP-939's PreparedTxnState: the producer id and epoch of a prepared
    transaction. Its string form ("producer_id:epoch", as Kafka's) is what
    goes from the process that prepared it to the one that completes it."""

    producer_id: int
    epoch: int

    def __str__(self) -> str:
        return f"{self.producer_id}:{self.epoch}"

    @classmethod
    def parse(cls, text: str) -> "PreparedTxnState":
        pid, sep, epoch = str(text).partition(":")
        try:
            state = cls(int(pid), int(epoch)) if sep else None
        except ValueError:
            state = None
        if state is None or state.producer_id < 0 or not 0 <= state.epoch <= 32767:
            raise ValueError(f"{text!r} is not a prepared transaction state (producer_id:epoch)")
        return state


class Outcome(enum.Enum):
    OK = "ok"
    RETRY = "retry"
    FIND_COORDINATOR = "find_coordinator"
    ABORTABLE = "abortable"
    FATAL = "fatal"


class Request(enum.Enum):
    INIT_PRODUCER_ID = "InitProducerId"
    ADD_PARTITIONS = "AddPartitionsToTxn"
    ADD_OFFSETS = "AddOffsetsToTxn"
    TXN_OFFSET_COMMIT = "TxnOffsetCommit"
    END_TXN = "EndTxn"
    PRODUCE = "Produce"


_COORDINATOR_MOVED = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})
_RETRY = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.CONCURRENT_TRANSACTIONS,
                    Errors.REQUEST_TIMED_OUT, Errors.NETWORK_EXCEPTION})
# The producer was replaced or may not use the id: nothing it does can succeed.
_FATAL = frozenset({Errors.PRODUCER_FENCED, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    Errors.CLUSTER_AUTHORIZATION_FAILED, Errors.INVALID_TXN_STATE,
                    Errors.INVALID_PRODUCER_EPOCH, Errors.UNSUPPORTED_VERSION})
# This transaction cannot commit, the next one may: the coordinator aborted it
# (timeout), a topic or group the principal may not use, a stale group member.
_ABORTABLE = frozenset({Errors.TRANSACTION_ABORTABLE, Errors.TOPIC_AUTHORIZATION_FAILED,
                        Errors.GROUP_AUTHORIZATION_FAILED, Errors.OPERATION_NOT_ATTEMPTED,
                        Errors.UNKNOWN_PRODUCER_ID, Errors.INVALID_PRODUCER_ID_MAPPING})
_GROUP_MEMBER = frozenset({Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION, Errors.FENCED_INSTANCE_ID,
                           Errors.FENCED_MEMBER_EPOCH, Errors.STALE_MEMBER_EPOCH})


def outcome(request: Request, code: int) -> Outcome:
    """What an error `code` in the answer to `request` means (Kafka's handlers)."""
    if code == Errors.NONE:
        return Outcome.OK
    if request is Request.PRODUCE:
        # A batch failed for good. Kafka: fenced / not authorized -> fatal,
        # anything else -> abortable. INVALID_PRODUCER_EPOCH and INVALID_TXN_STATE
        # here mean the coordinator ended the transaction under us (a timeout
        # abort bumps the epoch at the partitions, KIP-890), so they are
        # abortable (KIP-588 for the epoch); abort_transaction() recovers.
        if code in (Errors.INVALID_PRODUCER_EPOCH, Errors.INVALID_TXN_STATE):
            return Outcome.ABORTABLE
        return Outcome.FATAL if code in _FATAL else Outcome.ABORTABLE
    if code in _COORDINATOR_MOVED:
        return Outcome.FIND_COORDINATOR
    if code in _RETRY:
        return Outcome.RETRY
    if request is Request.ADD_PARTITIONS and code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
        return Outcome.RETRY  # the coordinator's metadata may not have the new topic yet
    if request is Request.TXN_OFFSET_COMMIT:
        if code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            return Outcome.RETRY
        if code in _GROUP_MEMBER:
            return Outcome.ABORTABLE  # Kafka's CommitFailedException: the consumer lost its partitions
    if request is Request.INIT_PRODUCER_ID:
        return Outcome.FATAL  # Kafka: every other InitProducerId error is fatal (INVALID_TRANSACTION_TIMEOUT too)
    if code in _FATAL:
        return Outcome.FATAL
    if code in _ABORTABLE:
        return Outcome.ABORTABLE
    return Outcome.FATAL  # Kafka's "unexpected error": fatal


def txn_error(code: int, detail: str, kind: Outcome) -> KafkaException:
    """The KafkaException an application sees, flagged as confluent-kafka flags it."""
    return KafkaException(KafkaErrorInfo(
        code, detail or error_message(code), retriable=kind in (Outcome.RETRY, Outcome.FIND_COORDINATOR),
        fatal=kind is Outcome.FATAL, txn_requires_abort=kind is Outcome.ABORTABLE))


def state_error(detail: str) -> KafkaException:
    """A call the state does not allow (Kafka's IllegalStateException; confluent's _STATE, -172)."""
    return KafkaException(KafkaErrorInfo(-172, detail, name="_STATE"))


def timed_out(detail: str) -> KafkaException:
    """The call ran out of time; calling it again resumes it (confluent's _TIMED_OUT, retriable)."""
    return KafkaException(KafkaErrorInfo(Errors.REQUEST_TIMED_OUT, detail, retriable=True))


class TransactionManager:
    def __init__(self, transactional_id: str, transaction_timeout_ms: int, two_phase_commit: bool = False) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.two_phase_commit = two_phase_commit  # KIP-939: transaction.two.phase.commit.enable
        # The open transaction in PREPARED_TRANSACTION: this producer's own after
        # prepare_transaction(), or the one InitProducerId kept (keep_prepared_txn).
        self.prepared: Optional[PreparedTxnState] = None
        self.kept = False  # the open transaction is one InitProducerId kept: it is at the coordinator
        self.state = TxnState.UNINITIALIZED
        self.last_error: Optional[KafkaException] = None
        self.in_transaction: set[TopicPartition] = set()  # added at the coordinator: batches may go
        self.pending: set[TopicPartition] = set()         # written to, not yet added
        self.adding: set[TopicPartition] = set()          # in the AddPartitionsToTxn under way
        self.offsets_added = False                        # AddOffsetsToTxn done in this transaction
        # A request of this transaction was sent to the coordinator (its answer may
        # have been lost): ending it then needs EndTxn, never a local end.
        self.reached = False

    # --- states -------------------------------------------------------------

    def _to(self, target: TxnState) -> None:
        if self.state not in ENTERED_FROM[target]:
            raise state_error(f"transactional id {self.transactional_id}: invalid transition "
                              f"from {self.state.value} to {target.value}")
        self.state = target

    def _require(self, call: str, *allowed: TxnState) -> None:
        if self.state is TxnState.FATAL_ERROR and self.last_error is not None:
            raise self.last_error
        if self.state not in allowed:
            if self.state is TxnState.ABORTABLE_ERROR and self.last_error is not None:
                raise self.last_error
            raise state_error(f"{call}: not allowed in state {self.state.value}")

    def begin_init(self) -> None:
        """init_transactions(): only once (a second call resumes one under way)."""
        if self.state is TxnState.INITIALIZING:
            return
        self._require("init_transactions", TxnState.UNINITIALIZED)
        self._to(TxnState.INITIALIZING)

    def initialized(self, kept: Optional[PreparedTxnState] = None) -> None:
        """InitProducerId answered; `kept`: the open transaction it kept (KIP-939)."""
        if kept is None:
            self._to(TxnState.READY)
        else:
            self._to(TxnState.PREPARED_TRANSACTION)
            self.prepared, self.kept = kept, True

    def check_two_phase(self, call: str) -> None:
        if not self.two_phase_commit:
            raise state_error(f"{call}: needs transaction.two.phase.commit.enable=true")

    def check_prepare(self) -> None:
        self.check_two_phase("prepare_transaction")
        self._require("prepare_transaction", TxnState.IN_TRANSACTION)

    def prepared_as(self, state: PreparedTxnState) -> None:
        """prepare_transaction() flushed every record: the transaction stays open, prepared."""
        self._to(TxnState.PREPARED_TRANSACTION)
        self.prepared = state

    def begin_transaction(self) -> None:
        self._require("begin_transaction", TxnState.READY)
        self._to(TxnState.IN_TRANSACTION)
        self._clear()

    def check_send(self) -> None:
        """A record may be produced only in a transaction (Kafka's send() outside one is refused)."""
        self._require("produce", TxnState.IN_TRANSACTION)

    def add_partition(self, tp: TopicPartition) -> None:
        """A record went to `tp`: the partition joins the transaction (AddPartitionsToTxn before its batches)."""
        if tp not in self.in_transaction and tp not in self.adding:
            self.pending.add(tp)

    def check_send_offsets(self) -> None:
        self._require("send_offsets_to_transaction", TxnState.IN_TRANSACTION)

    def begin_commit(self) -> bool:
        """commit_transaction(); False when one is already under way (a retry after a timeout resumes it)."""
        if self.state is TxnState.COMMITTING_TRANSACTION:
            return False
        self._require("commit_transaction", TxnState.IN_TRANSACTION, TxnState.PREPARED_TRANSACTION)
        self._to(TxnState.COMMITTING_TRANSACTION)
        return True

    def begin_abort(self) -> bool:
        """abort_transaction(), also after an abortable error; False when one is already under way."""
        if self.state is TxnState.ABORTING_TRANSACTION:
            return False
        self._require("abort_transaction", TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR,
                      TxnState.PREPARED_TRANSACTION)
        self._to(TxnState.ABORTING_TRANSACTION)
        return True

    @property
    def needs_end_txn(self) -> bool:
        """Something was sent to the coordinator in this transaction, whatever its
        answer (else ending it is local, as Kafka's). An AddPartitionsToTxn that
        failed may still have opened the transaction there, and every
        transaction must end with the coordinator's epoch bump (KIP-890): a
        local end would leave the next transaction on the same epoch, where an
        EndTxn of this one, late or re-sent, would end that one."""
        return bool(self.in_transaction or self.adding or self.offsets_added or self.kept or self.reached)

    def completed(self) -> None:
        """EndTxn answered (or nothing was there to end): ready for the next transaction."""
        self._to(TxnState.READY)
        self._clear()

    def abortable(self, error: KafkaException) -> None:
        if self.state is TxnState.FATAL_ERROR:
            return
        if self.state is TxnState.ABORTING_TRANSACTION:
            return  # the abort under way ends it anyway
        if self.state in (TxnState.READY, TxnState.UNINITIALIZED):
            return  # late news of a transaction already ended
        self.last_error = error
        self.state = TxnState.ABORTABLE_ERROR

    def fatal(self, error: KafkaException) -> None:
        self.last_error = error
        self.state = TxnState.FATAL_ERROR

    def fail(self, error: KafkaException) -> None:
        """An error whose flags say which: fatal or abortable."""
        if error.info.fatal():
            self.fatal(error)
        else:
            self.abortable(error)

    @property
    def has_error(self) -> bool:
        return self.state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR)

    # --- partitions ---------------------------------------------------------------

    def partitions_to_add(self) -> list[TopicPartition]:
        """The partitions for the next AddPartitionsToTxn (none while one is under way)."""
        if self.adding or not self.pending or \
                self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION):
            return []
        self.adding, self.pending = set(self.pending), set()
        self.reached = True
        return sorted(self.adding)

    def partitions_added(self, results: dict[TopicPartition, int]) -> Outcome:
        """The AddPartitionsToTxn answer per partition: the worst outcome.
        Added partitions may be sent to; on RETRY/FIND_COORDINATOR the rest go back to pending."""
        worst = Outcome.OK
        rank = [Outcome.OK, Outcome.RETRY, Outcome.FIND_COORDINATOR, Outcome.ABORTABLE, Outcome.FATAL]
        for tp in self.adding:
            code = results.get(tp, Errors.UNKNOWN_SERVER_ERROR)
            result = outcome(Request.ADD_PARTITIONS, code)
            if result is Outcome.OK:
                self.in_transaction.add(tp)
            else:
                self.pending.add(tp)
            if rank.index(result) > rank.index(worst):
                worst = result
        self.adding = set()
        return worst

    def add_retry_backoff_s(self, results: dict[TopicPartition, int], backoff_s: float) -> float:
        """How long to wait before adding the partitions an answer left pending:
        `backoff_s` (retry.backoff.ms), but ADD_PARTITIONS_RETRY_BACKOFF_S, as
        Kafka's client, when the transaction's first add met CONCURRENT_TRANSACTIONS:
        the coordinator is still writing the last transaction's markers, usually
        done well within retry.backoff.ms, and the whole transaction waits for it."""
        if not self.in_transaction and Errors.CONCURRENT_TRANSACTIONS in results.values():
            return ADD_PARTITIONS_RETRY_BACKOFF_S
        return backoff_s

    def adding_failed(self) -> None:
        """The AddPartitionsToTxn request itself failed: its partitions wait for the next one."""
        self.pending |= self.adding
        self.adding = set()

    def may_send(self, tp: TopicPartition) -> bool:
        return tp in self.in_transaction

    @property
    def sendable(self) -> frozenset[TopicPartition] | set[TopicPartition]:
        return self.in_transaction

    def _clear(self) -> None:
        self.in_transaction, self.pending, self.adding = set(), set(), set()
        self.offsets_added = self.reached = False
        self.last_error = None
        self.prepared, self.kept = None, False

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions whose records were all dropped before being added (an abort)."""
        self.pending.difference_update(partitions)
