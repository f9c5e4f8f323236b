"""Client quotas in the metadata image: replay by entity, deltas, refusals, snapshots."""
from __future__ import annotations

import math

import pytest

from metadata_quorum.image import MetadataImage, MetadataReplayError
from metadata_quorum.image.quota_records import quota_record
from metadata_quorum.metadata_state import MetadataStateMachine
from security.client_quotas import CLIENT_ID, USER
from tests.metadata_quorum.test_image_security import replay

ALICE = ((USER, "alice"),)
ALICE_APP = ((CLIENT_ID, "app"), (USER, "alice"))
DEFAULT_CLIENT = ((CLIENT_ID, None),)


def test_quotas_replay_by_entity_and_the_delta_names_them():
    image = MetadataImage()
    delta = replay(image, quota_record(ALICE, "producer_byte_rate", 1024.0),
                   quota_record(ALICE, "consumer_byte_rate", 2048.0),
                   quota_record(DEFAULT_CLIENT, "request_percentage", 12.5))
    assert image.client_quotas == {ALICE: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
                                   DEFAULT_CLIENT: {"request_percentage": 12.5}}
    assert delta.changed_client_quotas == {ALICE, DEFAULT_CLIENT} and not delta.is_empty()
    delta = replay(image, quota_record(ALICE, "producer_byte_rate", None))
    assert image.client_quotas[ALICE] == {"consumer_byte_rate": 2048.0}
    assert delta.changed_client_quotas == {ALICE}
    replay(image, quota_record(ALICE, "consumer_byte_rate", None))
    assert ALICE not in image.client_quotas  # an entity without keys is gone


def test_the_entity_has_one_spelling_whatever_the_order_of_its_parts():
    image = MetadataImage()
    record = quota_record(ALICE_APP, "producer_byte_rate", 10.0)
    record.client_quota.entity.reverse()
    replay(image, record)
    assert image.client_quotas == {ALICE_APP: {"producer_byte_rate": 10.0}}


@pytest.mark.parametrize("change", [
    lambda r: setattr(r, "key", "bytes_rate"),
    lambda r: setattr(r, "value", -1.0),
    lambda r: setattr(r, "value", math.nan),
    lambda r: setattr(r, "value", math.inf),
    lambda r: setattr(r, "value", 1.5),             # a byte rate is a whole number
    lambda r: r.ClearField("entity"),
    lambda r: setattr(r.entity[0], "entity_name", ""),
    lambda r: setattr(r.entity[0], "entity_type", "ip"),
    lambda r: r.entity.add(entity_type=USER, entity_name="bob"),
], ids=["unknown key", "negative", "NaN", "infinite", "fraction", "no entity", "empty name", "ip",
        "user twice"])
def test_records_the_controller_never_writes_are_corrupt(change):
    record = quota_record(ALICE, "producer_byte_rate", 1024.0)
    change(record.client_quota)
    image = MetadataImage()
    with pytest.raises(MetadataReplayError):
        replay(image, record)
    assert image.client_quotas == {}


def test_removing_an_unset_key_is_corrupt():
    with pytest.raises(MetadataReplayError):
        replay(MetadataImage(), quota_record(ALICE, "producer_byte_rate", None))


def test_snapshots_carry_the_quotas_and_a_loaded_snapshot_announces_them():
    image = MetadataImage()
    replay(image, quota_record(ALICE_APP, "producer_byte_rate", 1024.0),
           quota_record(DEFAULT_CLIENT, "consumer_byte_rate", 4096.0))
    copy = MetadataImage.from_snapshot(image.snapshot())
    assert copy == image and copy.client_quotas == image.client_quotas
    seen = []
    state = MetadataStateMachine()
    state.add_listener(lambda image, delta: seen.append(set(delta.changed_client_quotas)))
    state.load_snapshot(image.snapshot())
    assert seen == [{ALICE_APP, DEFAULT_CLIENT}]
