"""The transactional producer's pure parts: its settings, Kafka's state
machine (client/transactions.py), what each error means per request, and
the partitions a transaction must add before sending to them."""
from __future__ import annotations

import pytest

from client.accumulator import RecordAccumulator
from client.errors import InvalidConfigError, KafkaErrorInfo, KafkaException
from client.producer_batch import ProducerBatch
from client.producer_config import ProducerConfig
from client.record_future import Settlement, SyncRecordFuture
from client.transactions import (ADD_PARTITIONS_RETRY_BACKOFF_S, ENTERED_FROM, Outcome, PreparedTxnState, Request,
                                 TransactionManager, TxnState, outcome, state_error, timed_out, txn_error)
from kafka_protocol.compression import Codec
from kafka_protocol.errors import Errors
from kafka_protocol.records import decode_batch

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}
S = TxnState


# --- settings -----------------------------------------------------------------


def test_a_transactional_id_makes_the_producer_idempotent_with_kafkas_timeout() -> None:
    c = ProducerConfig.parse({**BOOT, "transactional.id": "tx-1"})
    assert (c.transactional_id, c.transaction_timeout_ms, c.enable_idempotence, c.acks) == ("tx-1", 60000, True, -1)
    assert ProducerConfig.parse(BOOT).transactional_id is None
    assert ProducerConfig.parse({**BOOT, "transactional.id": "t", "transaction.timeout.ms": "1000"}
                                ).transaction_timeout_ms == 1000


@pytest.mark.parametrize("setting, named", [
    ({"enable.idempotence": "false"}, "enable.idempotence=false"),
    ({"acks": "1"}, "acks='1'"),
    ({"retries": "0"}, "retries='0'"),
    ({"max.in.flight.requests.per.connection": "6"}, "max.in.flight.requests.per.connection='6'"),
])
def test_settings_a_transactional_producer_cannot_have_are_refused_by_name(setting: dict, named: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"{named}.*transactional"):
        ProducerConfig.parse({**BOOT, "transactional.id": "t", **setting})


def test_the_transaction_timeout_must_be_positive() -> None:
    with pytest.raises(InvalidConfigError, match="transaction.timeout.ms"):
        ProducerConfig.parse({**BOOT, "transactional.id": "t", "transaction.timeout.ms": "0"})


def test_batches_are_encoded_transactional_on_request() -> None:
    batch = ProducerBatch("t", 0, 0, 0.0)
    batch.append((None, b"v", 1, (), -1), 30, SyncRecordFuture.new(batch.settlement))
    batch.producer_id, batch.producer_epoch, batch.base_sequence = 7, 2, 0
    header = decode_batch(batch.encode(Codec.NONE, transactional=True)).header
    assert header.is_transactional and (header.producer_id, header.producer_epoch) == (7, 2)
    plain = ProducerBatch("t", 0, 1, 0.0)
    plain.append((None, b"v", 1, (), -1), 30, SyncRecordFuture.new(plain.settlement))
    assert not decode_batch(plain.encode(Codec.NONE)).header.is_transactional


# --- states -----------------------------------------------------------------------


def manager() -> TransactionManager:
    return TransactionManager("tx", 60000)


def ready() -> TransactionManager:
    m = manager()
    m.begin_init()
    m.initialized()
    return m


def test_a_transaction_goes_round_kafkas_states() -> None:
    m = manager()
    assert m.state is S.UNINITIALIZED
    m.begin_init()
    assert m.state is S.INITIALIZING
    m.begin_init()  # a call after a timeout resumes
    m.initialized()
    for end in ("commit", "abort"):
        m.begin_transaction()
        assert m.state is S.IN_TRANSACTION
        assert (m.begin_commit() if end == "commit" else m.begin_abort()) is True
        assert m.state is (S.COMMITTING_TRANSACTION if end == "commit" else S.ABORTING_TRANSACTION)
        assert (m.begin_commit() if end == "commit" else m.begin_abort()) is False  # resumed, not restarted
        m.completed()
        assert m.state is S.READY


@pytest.mark.parametrize("call", ["begin_transaction", "begin_commit", "begin_abort", "check_send",
                                  "check_send_offsets"])
def test_calls_before_init_transactions_are_state_errors(call: str) -> None:
    with pytest.raises(KafkaException) as raised:
        getattr(manager(), call)()
    assert raised.value.name == "_STATE" and not raised.value.info.fatal()


def test_outside_a_transaction_nothing_may_be_produced_and_init_is_once() -> None:
    m = ready()
    with pytest.raises(KafkaException, match="produce: not allowed in state READY"):
        m.check_send()
    with pytest.raises(KafkaException, match="init_transactions"):
        m.begin_init()
    m.begin_transaction()
    with pytest.raises(KafkaException, match="begin_transaction"):
        m.begin_transaction()


def test_an_abortable_error_allows_only_abort_and_is_raised_by_the_rest() -> None:
    m = ready()
    m.begin_transaction()
    error = txn_error(Errors.TRANSACTION_ABORTABLE, "timed out by the coordinator", Outcome.ABORTABLE)
    m.abortable(error)
    assert m.state is S.ABORTABLE_ERROR and m.has_error
    for call in (m.check_send, m.begin_commit, m.check_send_offsets):
        with pytest.raises(KafkaException) as raised:
            call()
        assert raised.value is error and raised.value.info.txn_requires_abort()
    m.begin_abort()
    m.completed()
    assert m.state is S.READY and m.last_error is None
    m.begin_transaction()  # the producer carries on


def test_a_fatal_error_ends_everything() -> None:
    m = ready()
    m.begin_transaction()
    fenced = txn_error(Errors.PRODUCER_FENCED, "", Outcome.FATAL)
    m.fatal(fenced)
    m.abortable(txn_error(Errors.TRANSACTION_ABORTABLE, "", Outcome.ABORTABLE))  # never undoes fatal
    for call in (m.begin_abort, m.begin_commit, m.begin_transaction, m.check_send):
        with pytest.raises(KafkaException) as raised:
            call()
        assert raised.value is fenced and raised.value.info.fatal() and raised.value.name == "PRODUCER_FENCED"


def test_late_abortable_news_after_the_transaction_ended_is_ignored() -> None:
    m = ready()
    m.abortable(txn_error(Errors.TOPIC_AUTHORIZATION_FAILED, "", Outcome.ABORTABLE))
    assert m.state is S.READY
    m.begin_transaction()
    m.begin_abort()
    m.abortable(txn_error(Errors.TOPIC_AUTHORIZATION_FAILED, "", Outcome.ABORTABLE))
    assert m.state is S.ABORTING_TRANSACTION


def test_every_state_has_kafkas_entry_rules() -> None:
    assert set(ENTERED_FROM) == set(TxnState)
    assert ENTERED_FROM[S.COMMITTING_TRANSACTION] == {S.IN_TRANSACTION, S.PREPARED_TRANSACTION}
    assert ENTERED_FROM[S.ABORTING_TRANSACTION] == {S.IN_TRANSACTION, S.ABORTABLE_ERROR, S.PREPARED_TRANSACTION}
    assert ENTERED_FROM[S.PREPARED_TRANSACTION] == {S.IN_TRANSACTION, S.INITIALIZING}  # KIP-939
    assert S.ABORTABLE_ERROR not in ENTERED_FROM[S.COMMITTING_TRANSACTION]


# --- partitions -----------------------------------------------------------------------


def test_partitions_are_added_once_before_their_batches_may_go() -> None:
    m = ready()
    m.begin_transaction()
    m.check_send()
    m.add_partition(("a", 0))
    m.add_partition(("a", 1))
    assert not m.may_send(("a", 0)) and not m.needs_end_txn
    assert m.partitions_to_add() == [("a", 0), ("a", 1)]
    assert m.partitions_to_add() == []  # one AddPartitionsToTxn at a time
    m.add_partition(("a", 0))  # already being added: not again
    m.add_partition(("b", 0))
    assert m.partitions_added({("a", 0): 0, ("a", 1): int(Errors.CONCURRENT_TRANSACTIONS)}) is Outcome.RETRY
    # a partition is in: not the transaction's first add any more, retry.backoff.ms
    assert m.add_retry_backoff_s({("a", 1): int(Errors.CONCURRENT_TRANSACTIONS)}, 0.1) == 0.1
    assert m.may_send(("a", 0)) and not m.may_send(("a", 1)) and m.needs_end_txn
    assert m.partitions_to_add() == [("a", 1), ("b", 0)]
    assert m.partitions_added({("a", 1): 0, ("b", 0): 0}) is Outcome.OK
    assert m.sendable == {("a", 0), ("a", 1), ("b", 0)}
    m.begin_commit()
    m.completed()
    m.begin_transaction()
    assert m.sendable == set() and not m.needs_end_txn  # each transaction adds its partitions again


def test_a_failed_add_request_puts_its_partitions_back() -> None:
    m = ready()
    m.begin_transaction()
    m.add_partition(("a", 0))
    m.partitions_to_add()
    m.adding_failed()
    assert m.partitions_to_add() == [("a", 0)]
    assert m.partitions_added({("a", 0): int(Errors.TOPIC_AUTHORIZATION_FAILED)}) is Outcome.ABORTABLE
    m.add_partition(("a", 0))
    m.add_partition(("b", 0))
    m.partitions_to_add()
    assert m.partitions_added({("b", 0): int(Errors.PRODUCER_FENCED)}) is Outcome.FATAL


def test_offsets_alone_need_an_end_txn() -> None:
    m = ready()
    m.begin_transaction()
    m.offsets_added = True
    assert m.needs_end_txn


# --- what errors mean ---------------------------------------------------------------------


@pytest.mark.parametrize("request_kind, code, expected", [
    (Request.ADD_PARTITIONS, Errors.CONCURRENT_TRANSACTIONS, Outcome.RETRY),
    (Request.ADD_PARTITIONS, Errors.COORDINATOR_LOAD_IN_PROGRESS, Outcome.RETRY),
    (Request.ADD_PARTITIONS, Errors.NOT_COORDINATOR, Outcome.FIND_COORDINATOR),
    (Request.ADD_PARTITIONS, Errors.UNKNOWN_TOPIC_OR_PARTITION, Outcome.RETRY),
    (Request.ADD_PARTITIONS, Errors.TOPIC_AUTHORIZATION_FAILED, Outcome.ABORTABLE),
    (Request.ADD_PARTITIONS, Errors.TRANSACTION_ABORTABLE, Outcome.ABORTABLE),
    (Request.ADD_PARTITIONS, Errors.PRODUCER_FENCED, Outcome.FATAL),
    (Request.ADD_PARTITIONS, Errors.INVALID_TXN_STATE, Outcome.FATAL),
    (Request.END_TXN, Errors.COORDINATOR_NOT_AVAILABLE, Outcome.FIND_COORDINATOR),
    (Request.END_TXN, Errors.CONCURRENT_TRANSACTIONS, Outcome.RETRY),
    (Request.END_TXN, Errors.TRANSACTION_ABORTABLE, Outcome.ABORTABLE),
    (Request.END_TXN, Errors.INVALID_PRODUCER_EPOCH, Outcome.FATAL),
    (Request.END_TXN, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.FATAL),
    (Request.INIT_PRODUCER_ID, Errors.CONCURRENT_TRANSACTIONS, Outcome.RETRY),
    (Request.INIT_PRODUCER_ID, Errors.INVALID_TRANSACTION_TIMEOUT, Outcome.FATAL),
    (Request.INIT_PRODUCER_ID, Errors.TRANSACTION_ABORTABLE, Outcome.FATAL),
    (Request.ADD_OFFSETS, Errors.GROUP_AUTHORIZATION_FAILED, Outcome.ABORTABLE),
    (Request.TXN_OFFSET_COMMIT, Errors.UNKNOWN_MEMBER_ID, Outcome.ABORTABLE),
    (Request.TXN_OFFSET_COMMIT, Errors.FENCED_MEMBER_EPOCH, Outcome.ABORTABLE),
    (Request.TXN_OFFSET_COMMIT, Errors.UNKNOWN_TOPIC_OR_PARTITION, Outcome.RETRY),
    (Request.TXN_OFFSET_COMMIT, Errors.PRODUCER_FENCED, Outcome.FATAL),
    (Request.PRODUCE, Errors.PRODUCER_FENCED, Outcome.FATAL),
    (Request.PRODUCE, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.FATAL),
    (Request.PRODUCE, Errors.INVALID_PRODUCER_EPOCH, Outcome.ABORTABLE),
    (Request.PRODUCE, Errors.INVALID_TXN_STATE, Outcome.ABORTABLE),
    (Request.PRODUCE, Errors.REQUEST_TIMED_OUT, Outcome.ABORTABLE),
    (Request.PRODUCE, Errors.MESSAGE_TOO_LARGE, Outcome.ABORTABLE),
    (Request.END_TXN, Errors.NONE, Outcome.OK),
    (Request.END_TXN, 9999, Outcome.FATAL),
])
def test_what_each_error_means(request_kind: Request, code: int, expected: Outcome) -> None:
    assert outcome(request_kind, code) is expected


def test_errors_carry_confluent_kafkas_flags() -> None:
    fenced = txn_error(Errors.PRODUCER_FENCED, "fenced by epoch 3", Outcome.FATAL)
    info = fenced.args[0]
    assert isinstance(info, KafkaErrorInfo)
    assert (info.code(), info.name(), info.fatal(), info.retriable(), info.txn_requires_abort()) == (
        90, "PRODUCER_FENCED", True, False, False)
    assert str(fenced) == "PRODUCER_FENCED: fenced by epoch 3" and fenced.code == 90
    assert txn_error(Errors.TRANSACTION_ABORTABLE, "", Outcome.ABORTABLE).info.txn_requires_abort()
    late = timed_out("EndTxn: no answer")
    assert late.info.retriable() and late.retriable and not late.info.fatal()
    assert state_error("x").info.code() == -172


def test_the_accumulator_holds_back_partitions_not_yet_in_the_transaction() -> None:
    acc = RecordAccumulator(batch_size=1000, linger_ms=0)
    for partition in (0, 1):
        acc.append(("t", partition), (None, b"v", 1, (), -1), 30, SyncRecordFuture.new(Settlement()), 0.0)
    m = ready()
    m.begin_transaction()
    m.add_partition(("t", 0))
    m.add_partition(("t", 1))
    m.partitions_to_add()
    m.partitions_added({("t", 0): 0, ("t", 1): int(Errors.CONCURRENT_TRANSACTIONS)})
    check = acc.ready(1.0, lambda t, p: 1, m.sendable)
    assert check.nodes == frozenset({1}) and not check.unknown_leaders
    drained = acc.drain(frozenset({1}), lambda t, p: 1, 1 << 20, 1.0, m.sendable)
    assert [b.tp for b in drained[1]] == [("t", 0)]  # ("t", 1) waits for its AddPartitionsToTxn
    assert acc.ready(1.0, lambda t, p: 1, m.sendable).nodes == frozenset()
    m.partitions_to_add()
    m.partitions_added({("t", 1): 0})
    assert [b.tp for b in acc.drain(frozenset({1}), lambda t, p: 1, 1 << 20, 1.0, m.sendable)[1]] == [("t", 1)]


def test_the_first_add_refused_while_the_last_transaction_completes_is_retried_soon() -> None:
    """As Kafka's client: CONCURRENT_TRANSACTIONS on a transaction's first
    AddPartitionsToTxn (the last one's markers still being written) is retried
    after 20 ms, not retry.backoff.ms; any other retry waits the backoff."""
    m = ready()
    m.begin_transaction()
    m.add_partition(("a", 0))
    assert m.partitions_to_add() == [("a", 0)]
    concurrent = {("a", 0): int(Errors.CONCURRENT_TRANSACTIONS)}
    assert m.partitions_added(concurrent) is Outcome.RETRY
    assert m.add_retry_backoff_s(concurrent, 0.1) == ADD_PARTITIONS_RETRY_BACKOFF_S == 0.02
    assert m.add_retry_backoff_s({("a", 0): int(Errors.COORDINATOR_LOAD_IN_PROGRESS)}, 0.1) == 0.1


# --- KIP-939: two-phase commit ---------------------------------------------------------------


def test_two_phase_commit_needs_a_transactional_id_and_is_off_by_default() -> None:
    assert ProducerConfig.parse({**BOOT, "transactional.id": "t"}).two_phase_commit is False
    assert ProducerConfig.parse({**BOOT, "transactional.id": "t",
                                 "transaction.two.phase.commit.enable": "true"}).two_phase_commit is True
    with pytest.raises(InvalidConfigError, match="transaction.two.phase.commit.enable=true: needs transactional.id"):
        ProducerConfig.parse({**BOOT, "transaction.two.phase.commit.enable": "true"})


def test_prepared_txn_state_round_trips_its_string_and_refuses_others() -> None:
    state = PreparedTxnState(4711, 12)
    assert str(state) == "4711:12" and PreparedTxnState.parse("4711:12") == state
    for bad in ("", "4711", "a:1", "1:b", "-1:0", "1:40000", "1:2:3"):
        with pytest.raises(ValueError, match="not a prepared transaction state"):
            PreparedTxnState.parse(bad)


def test_prepare_keeps_the_transaction_open_until_commit_or_abort() -> None:
    m = TransactionManager("t", 1000, two_phase_commit=True)
    m.begin_init()
    m.initialized()
    m.begin_transaction()
    m.add_partition(("out", 0))
    m.partitions_to_add()
    m.partitions_added({("out", 0): Errors.NONE})
    m.check_prepare()
    m.prepared_as(PreparedTxnState(7, 3))
    assert m.state is S.PREPARED_TRANSACTION and m.prepared == PreparedTxnState(7, 3)
    with pytest.raises(KafkaException, match="not allowed in state PREPARED_TRANSACTION"):
        m.check_send()  # no more records once prepared
    assert m.begin_commit() and m.needs_end_txn
    m.completed()
    assert (m.state, m.prepared, m.kept) == (S.READY, None, False)


def test_a_kept_transaction_is_prepared_from_init_and_needs_end_txn() -> None:
    m = TransactionManager("t", 1000, two_phase_commit=True)
    m.begin_init()
    m.initialized(PreparedTxnState(7, 3))
    assert m.state is S.PREPARED_TRANSACTION and m.kept and m.needs_end_txn
    assert m.begin_abort()
    m.completed()
    assert m.state is S.READY and not m.needs_end_txn


def test_two_phase_calls_without_the_setting_are_state_errors() -> None:
    m = ready()
    m.begin_transaction()
    with pytest.raises(KafkaException, match="prepare_transaction: needs transaction.two.phase.commit.enable=true"):
        m.check_prepare()


def test_a_transaction_whose_add_was_sent_ends_with_end_txn_even_if_the_add_failed() -> None:
    """The failed AddPartitionsToTxn may have opened the transaction at the
    coordinator, and the next transaction must not keep this one's epoch: the
    abort goes to the coordinator (which bumps the epoch even with nothing open)."""
    m = ready()
    m.begin_transaction()
    assert not m.needs_end_txn  # nothing sent yet: ending it is local
    m.add_partition(("a", 0))
    assert m.partitions_to_add() == [("a", 0)]
    m.adding_failed()
    assert not m.in_transaction and m.needs_end_txn
    assert m.begin_abort()
    m.completed()
    m.begin_transaction()
    assert not m.needs_end_txn
