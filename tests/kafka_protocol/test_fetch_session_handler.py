"""The fetching side of KIP-227 sessions: what each request sends and forgets."""
from __future__ import annotations

from kafka_protocol.errors import Errors
from kafka_protocol.fetch_session_handler import (FINAL_EPOCH, INITIAL_EPOCH, MAX_EPOCH, FetchSessionHandler,
                                                  next_epoch)


def wanted(offsets):
    return {("t", i): offset for i, offset in enumerate(offsets)}


def test_a_session_sends_everything_once_then_only_what_changed():
    handler = FetchSessionHandler()
    plan = handler.plan(wanted([0, 0, 0]))
    assert (plan.session_id, plan.epoch, plan.full, len(plan.send), plan.forgotten) == (0, INITIAL_EPOCH, True, 3, [])
    assert handler.answered(plan, Errors.NONE, 77)
    plan = handler.plan(wanted([0, 5, 0]))
    assert (plan.session_id, plan.epoch, plan.full, dict(plan.send)) == (77, 1, False, {("t", 1): 5})
    assert handler.answered(plan, Errors.NONE, 77)
    plan = handler.plan(wanted([0, 5]))
    assert (plan.epoch, dict(plan.send), plan.forgotten) == (2, {}, [("t", 2)])


def test_an_unchanged_session_sends_nothing_whatever_the_partition_count():
    for count in (3, 3000):
        handler = FetchSessionHandler()
        plan = handler.plan(wanted([0] * count))
        handler.answered(plan, Errors.NONE, 9)
        plan = handler.plan(wanted([0] * count))
        assert (dict(plan.send), plan.forgotten) == ({}, [])


def test_a_broker_without_a_session_gets_full_fetches():
    handler = FetchSessionHandler()
    for _ in range(3):
        plan = handler.plan(wanted([0, 0]))
        assert plan.full and len(plan.send) == 2
        assert handler.answered(plan, Errors.NONE, 0)


def test_a_session_error_or_a_lost_answer_starts_over_with_a_full_fetch_naming_the_session():
    handler = FetchSessionHandler()
    handler.answered(handler.plan(wanted([0, 0])), Errors.NONE, 5)
    plan = handler.plan(wanted([1, 0]))
    assert not handler.answered(plan, Errors.INVALID_FETCH_SESSION_EPOCH, 0)
    plan = handler.plan(wanted([1, 0]))
    assert (plan.session_id, plan.epoch, len(plan.send)) == (5, INITIAL_EPOCH, 2)
    handler.answered(plan, Errors.NONE, 6)
    handler.plan(wanted([2, 0]))
    handler.failed()
    plan = handler.plan(wanted([2, 0]))
    assert (plan.session_id, plan.epoch, len(plan.send)) == (6, INITIAL_EPOCH, 2)


def test_epochs_wrap_past_the_largest_to_one():
    assert [next_epoch(e) for e in (0, 1, MAX_EPOCH, FINAL_EPOCH)] == [1, 2, 1, FINAL_EPOCH]


def test_a_partition_answered_with_an_error_is_named_again_though_unchanged():
    handler = FetchSessionHandler()
    handler.answered(handler.plan(wanted([0, 0])), Errors.NONE, 5)
    handler.resend(("t", 1))
    plan = handler.plan(wanted([0, 0]))
    assert dict(plan.send) == {("t", 1): 0}


def test_a_plan_told_what_changed_sends_only_that_and_starts_over_after_an_error():
    handler = FetchSessionHandler()
    handler.answered(handler.plan(wanted([0, 0, 0])), Errors.NONE, 5)
    plan = handler.plan(wanted([0, 4, 0]), changed=[("t", 1), ("t", 2)])
    assert (dict(plan.send), plan.forgotten) == ({("t", 1): 4}, [])
    handler.answered(plan, Errors.NONE, 5)
    handler.resend(("t", 0))
    assert dict(handler.plan(wanted([0, 4, 0]), changed=[]).send) == {("t", 0): 0}
    handler.failed()
    assert handler.plan(wanted([0, 4, 0]), changed=[]).full
