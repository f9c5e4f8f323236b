"""AlterClientQuotas as a pure controller decision, with Kafka's per-entry errors."""
from __future__ import annotations

import math

import pytest

from kraftlog_api import controller_pb2 as cpb
from metadata_quorum.controller import Error
from metadata_quorum.controller.result import MAX_RECORDS_PER_USER_OP

from .test_controller_harness import Harness, kinds

Req = cpb.AlterClientQuotasRequest
Part = cpb.ClientQuotaEntityData
ALICE = [Part(entity_type="user", entity_name="alice")]
ALICE_KEY = (("user", "alice"),)


def entry(entity, **ops: float | None) -> Req.Entry:
    return Req.Entry(entity=entity, ops=[Req.Op(key=k, remove=True) if v is None else Req.Op(key=k, value=v)
                                         for k, v in ops.items()])


def alter(h: Harness, *entries: Req.Entry, validate_only: bool = False) -> cpb.AlterClientQuotasResponse:
    return h.apply(h.controller.handle_alter_client_quotas(Req(entries=entries, validate_only=validate_only)))


def test_alter_sets_and_removes_keys_writing_only_what_changes():
    h = Harness()
    app_default_user = [Part(entity_type="client-id", entity_name="app"), Part(entity_type="user")]
    response = alter(h, entry(ALICE, producer_byte_rate=1024, consumer_byte_rate=2048),
                     entry(app_default_user, request_percentage=12.5))
    assert [r.error_code for r in response.entries] == [Error.NONE, Error.NONE]
    assert list(response.entries[1].entity) == app_default_user  # each result names its entity as asked
    assert kinds(h.last) == ["client_quota"] * 3
    assert h.image.client_quotas == {ALICE_KEY: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
                                     (("client-id", "app"), ("user", None)): {"request_percentage": 12.5}}
    # the same value again and the removal of an unset key: nothing to write
    response = alter(h, entry(ALICE, producer_byte_rate=1024, request_percentage=None))
    assert response.entries[0].error_code == Error.NONE and h.last.records == []
    alter(h, entry(ALICE, producer_byte_rate=None, consumer_byte_rate=None))
    assert ALICE_KEY not in h.image.client_quotas


def test_validate_only_decides_and_writes_nothing():
    h = Harness()
    response = alter(h, entry(ALICE, producer_byte_rate=1024), entry(ALICE[:0], producer_byte_rate=1),
                     validate_only=True)
    assert [r.error_code for r in response.entries] == [Error.NONE, Error.INVALID_REQUEST]
    assert h.last.records == [] and h.image.client_quotas == {}


@pytest.mark.parametrize("bad, code, words", [
    (entry(ALICE, producer_byte_rate=-1), Error.INVALID_REQUEST, "greater than 0"),
    (entry(ALICE, producer_byte_rate=0), Error.INVALID_REQUEST, "greater than 0"),
    (entry(ALICE, consumer_byte_rate=math.nan), Error.INVALID_REQUEST, "finite"),
    (entry(ALICE, consumer_byte_rate=math.inf), Error.INVALID_REQUEST, "finite"),
    (entry(ALICE, producer_byte_rate=2.0**63), Error.INVALID_REQUEST, "too large for a LONG"),
    (entry(ALICE, producer_byte_rate=10.5), Error.INVALID_REQUEST, "fractional"),
    (entry(ALICE, request_percentage=-0.5), Error.INVALID_REQUEST, "greater than 0"),
    (entry(ALICE, bytes_per_second=10), Error.INVALID_REQUEST, "Invalid configuration key"),
    (entry(ALICE, **{"SCRAM-SHA-256": None}), Error.INVALID_REQUEST, "Invalid configuration key"),
    (entry([], producer_byte_rate=10), Error.INVALID_REQUEST, "empty client quota entity"),
    (entry([Part(entity_type="user", entity_name="")], producer_byte_rate=10), Error.INVALID_REQUEST,
     "Empty user"),
    (entry([Part(entity_type="ip", entity_name="10.0.0.1")], producer_byte_rate=10), Error.UNSUPPORTED_VERSION,
     "entity type"),
    (entry([*ALICE, Part(entity_type="user", entity_name="bob")], producer_byte_rate=10), Error.INVALID_REQUEST,
     "duplicate entity entry"),
    (entry([Part(entity_type="client-id", entity_name="x" * 40000)], producer_byte_rate=10),
     Error.INVALID_REQUEST, "characters long"),
    (Req.Entry(entity=ALICE, ops=[Req.Op(key="producer_byte_rate", value=1),
                                  Req.Op(key="producer_byte_rate", remove=True)]),
     Error.INVALID_REQUEST, "Duplicate quota key"),
], ids=["negative", "zero", "NaN", "infinite", "huge", "fraction", "negative percentage", "unknown key",
        "SCRAM key", "empty entity", "empty name", "ip", "user twice", "40000 characters", "key twice"])
def test_each_bad_entry_is_refused_on_its_own(bad, code, words):
    h = Harness()
    good = entry([Part(entity_type="client-id")], producer_byte_rate=1000)
    response = alter(h, bad, good)
    assert response.entries[0].error_code == code and words in response.entries[0].error_message
    assert len(response.entries[0].error_message) < 200  # a hostile name is never echoed whole
    assert response.entries[1].error_code == Error.NONE
    assert h.image.client_quotas == {(("client-id", None),): {"producer_byte_rate": 1000.0}}


def test_an_entity_named_by_two_entries_is_refused_in_both():
    h = Harness()
    reordered = [Part(entity_type="client-id", entity_name="app"), *ALICE]
    response = alter(h, entry([*ALICE, reordered[0]], producer_byte_rate=1), entry(reordered, consumer_byte_rate=2))
    assert [r.error_code for r in response.entries] == [Error.INVALID_REQUEST] * 2
    assert h.image.client_quotas == {}


def test_requests_over_the_record_cap_are_refused_whole():
    h = Harness()
    many = [entry([Part(entity_type="client-id", entity_name=f"c{i}")], producer_byte_rate=1)
            for i in range(MAX_RECORDS_PER_USER_OP + 1)]
    assert alter(h, *many).error_code == Error.POLICY_VIOLATION and not h.image.client_quotas
