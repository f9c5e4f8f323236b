"""Feature levels (KIP-584, KIP-778) as pure controller decisions: UpdateFeatures,
the registration check, the metadata.version gate on what the controller writes."""
from __future__ import annotations

import pytest

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum import features
from metadata_quorum.controller import Error
from metadata_quorum.controller.bootstrap import bootstrap_marker, check_bootstrap_records
from metadata_quorum.controller.features import (
    SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, gate, update_features,
)
from metadata_quorum.controller.result import ControllerResult
from metadata_quorum.features import METADATA_VERSION, FeatureRange, MetadataLevel
from metadata_quorum.image import MetadataImage

from .test_controller_harness import CLUSTER, CONTROLLER_ID, Harness

Update = cpb.UpdateFeaturesRequest.FeatureUpdate
# Software of a later release: metadata.version 1-2 (the gate tests give level 2 a record kind).
NEWER = {METADATA_VERSION: FeatureRange(METADATA_VERSION, 1, 2)}


def update(h: Harness, *updates: Update, validate_only: bool = False,
           supported: dict[str, FeatureRange] = features.SUPPORTED) -> cpb.UpdateFeaturesResponse:
    return h.apply(update_features(h.image, cpb.UpdateFeaturesRequest(feature_updates=updates,
                                                                      validate_only=validate_only),
                                   CONTROLLER_ID, supported))


def mv(level: int, upgrade_type: int = UPGRADE) -> Update:
    return Update(feature=METADATA_VERSION, max_version_level=level, upgrade_type=upgrade_type)


def register(h: Harness, broker_id: int, *ranges: tuple[str, int, int]) -> cpb.BrokerRegistrationResponse:
    request = cpb.BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=CLUSTER, incarnation_id=f"inc-{broker_id}",
        listeners=[mpb.BrokerEndpoint(name="PLAINTEXT", host="localhost", port=9092)],
        features=[mpb.FeatureRange(name=n, min_supported_version=low, max_supported_version=high)
                  for n, low, high in ranges])
    return h.apply(h.controller.handle_registration(request, h.now))


def test_every_record_kind_has_a_metadata_version_level():
    """A new MetadataRecord kind must be given a level (and SUPPORTED raised) before a controller may write it."""
    kinds = {f.name for f in mpb.MetadataRecord.DESCRIPTOR.oneofs_by_name["record"].fields}
    assert kinds == features.allowed_records(features.SUPPORTED[METADATA_VERSION].max_level)
    levels = [m.level for m in features.METADATA_LEVELS]
    assert levels == list(range(1, len(levels) + 1))


def test_a_log_without_the_feature_is_at_level_1_and_describes_without_internal_markers():
    image = MetadataImage()
    image.apply(bootstrap_marker(), 0)
    assert features.metadata_level(image.features) == 1
    assert features.finalized(image.features) == {METADATA_VERSION: 1}


def test_upgrade_to_the_level_in_force_writes_it_once_then_nothing():
    h = Harness()
    response = update(h, mv(1))
    assert response.error_code == Error.NONE and [r.error_code for r in response.results] == [Error.NONE]
    assert h.image.features == {METADATA_VERSION: 1}
    update(h, mv(1))
    assert h.last is not None and h.last.records == []


@pytest.mark.parametrize("bad, code, words", [
    (Update(feature="no.such.feature", max_version_level=1, upgrade_type=UPGRADE), Error.INVALID_UPDATE_VERSION,
     "does not support this feature"),
    (Update(feature="kraftlog.bootstrap", max_version_level=0, upgrade_type=SAFE_DOWNGRADE),
     Error.INVALID_UPDATE_VERSION, "does not support this feature"),
    (mv(2), Error.INVALID_UPDATE_VERSION, "Local controller only supports versions 1-1"),
    (mv(2**31 - 1), Error.INVALID_UPDATE_VERSION, "only supports"),
    (mv(0, SAFE_DOWNGRADE), Error.INVALID_UPDATE_VERSION, "might delete metadata"),
    (mv(-1, UNSAFE_DOWNGRADE), Error.INVALID_UPDATE_VERSION, "Unsafe metadata downgrade is not supported"),
    (mv(0), Error.INVALID_UPDATE_VERSION, "might delete metadata"),
    (Update(feature="", max_version_level=1, upgrade_type=UPGRADE), Error.INVALID_REQUEST, "empty"),
    (Update(feature="x" * 40_000, max_version_level=1, upgrade_type=UPGRADE), Error.INVALID_REQUEST, "empty"),
    (mv(1, 0), Error.INVALID_REQUEST, "Unknown upgrade type 0"),
    (mv(1, 9), Error.INVALID_REQUEST, "Unknown upgrade type 9"),
])
def test_refusals_write_nothing(bad, code, words):
    h = Harness()
    h.brokers(2)
    before = h.image.offset
    response = update(h, bad)
    assert response.error_code == code and words in response.error_message, response
    assert response.results[0].error_code == code
    assert h.image.offset == before and features.metadata_level(h.image.features) == 1


def test_one_refused_update_refuses_the_whole_request():
    h = Harness()
    response = update(h, mv(1), Update(feature="no.such.feature", max_version_level=1, upgrade_type=UPGRADE))
    assert response.error_code == Error.INVALID_UPDATE_VERSION
    assert [r.error_code for r in response.results] == [Error.NONE, Error.INVALID_UPDATE_VERSION]
    assert h.last is not None and h.last.records == [] and METADATA_VERSION not in h.image.features


def test_the_same_feature_twice_is_refused():
    response = update(Harness(), mv(1), mv(1))
    assert response.error_code == Error.INVALID_REQUEST and "multiple updates" in response.error_message


def test_a_level_a_registered_broker_does_not_support_is_refused_and_a_dry_run_writes_nothing():
    h = Harness()
    assert register(h, 1, (METADATA_VERSION, 1, 2)).error_code == Error.NONE
    assert register(h, 2).error_code == Error.NONE  # older software: lists nothing, so level 1 only
    response = update(h, mv(2), supported=NEWER)
    assert response.error_code == Error.INVALID_UPDATE_VERSION
    assert "Broker 2 only supports versions 1-1" in response.error_message
    # broker 2 restarts on newer software: its new registration carries its range
    assert register(h, 2, (METADATA_VERSION, 1, 2)).error_code == Error.NONE
    assert h.image.brokers[2].features == ((METADATA_VERSION, 1, 2),)
    assert update(h, mv(2), validate_only=True, supported=NEWER).error_code == Error.NONE
    assert h.last is not None and h.last.records == [] and METADATA_VERSION not in h.image.features
    assert update(h, mv(2), supported=NEWER).error_code == Error.NONE
    assert h.image.features[METADATA_VERSION] == 2
    # and it never comes down again
    assert update(h, mv(1, SAFE_DOWNGRADE), supported=NEWER).error_code == Error.INVALID_UPDATE_VERSION
    assert update(h, mv(1), supported=NEWER).error_code == Error.INVALID_UPDATE_VERSION


def test_a_broker_that_does_not_support_the_finalized_level_cannot_register():
    h = Harness()
    h.record(feature_level=mpb.FeatureLevelRecord(name=METADATA_VERSION, feature_level=2))  # a newer cluster's log
    old = register(h, 1)
    assert old.error_code == Error.UNSUPPORTED_VERSION
    assert "finalized version 2 of metadata.version is not supported" in old.error_message
    assert 1 not in h.image.brokers
    assert register(h, 1, (METADATA_VERSION, 1, 1)).error_code == Error.UNSUPPORTED_VERSION
    assert register(h, 1, (METADATA_VERSION, 1, 3)).error_code == Error.NONE


@pytest.mark.parametrize("ranges", [(("", 1, 1),), ((METADATA_VERSION, 2, 1),), ((METADATA_VERSION, -1, 1),)])
def test_a_registration_with_a_bad_range_is_refused(ranges):
    h = Harness()
    assert register(h, 1, *ranges).error_code == Error.INVALID_REQUEST
    assert 1 not in h.image.brokers


def test_other_features_go_down_with_a_downgrade_type_and_off_at_level_0():
    supported = {**features.SUPPORTED, "x.version": FeatureRange("x.version", 0, 3)}
    h = Harness()
    assert register(h, 1, ("x.version", 0, 3)).error_code == Error.NONE
    feature = lambda level, kind=UPGRADE: Update(feature="x.version", max_version_level=level, upgrade_type=kind)  # noqa: E731
    assert update(h, feature(3), supported=supported).error_code == Error.NONE
    response = update(h, feature(2), supported=supported)
    assert response.error_code == Error.INVALID_UPDATE_VERSION and "downgrade" in response.error_message
    assert update(h, feature(2, SAFE_DOWNGRADE), supported=supported).error_code == Error.NONE
    assert update(h, feature(0, SAFE_DOWNGRADE), supported=supported).error_code == Error.NONE
    assert "x.version" not in h.image.features


def test_the_gate_refuses_record_kinds_above_the_finalized_level():
    levels = (*features.METADATA_LEVELS, MetadataLevel(2, "2.0-IV0", frozenset({"no_op"})))
    low = {k for m in features.METADATA_LEVELS for k in m.records} - {"no_op"}
    table = (MetadataLevel(1, "1.0-IV0", frozenset(low)), levels[-1])
    batch = mpb.MetadataRecord(batch=mpb.MetadataRecordBatch(records=[mpb.MetadataRecord(no_op=mpb.NoOpRecord())]))
    topic = mpb.MetadataRecord(topic=mpb.TopicRecord(name="t", topic_id=b"x" * 16))
    assert features.refused_records([topic, batch], 1, table) == ["no_op"]
    assert features.refused_records([topic, batch], 2, table) == []
    # with this software's own table every record it writes is allowed at level 1
    image = MetadataImage()
    assert gate(image, ControllerResult([topic, batch])) is None


def test_snapshots_keep_each_brokers_supported_features():
    h = Harness()
    register(h, 1, (METADATA_VERSION, 1, 2))
    copy = MetadataImage()
    for offset, record in enumerate(h.image.to_records()):
        copy.apply(record, offset)
    assert copy.brokers[1].features == ((METADATA_VERSION, 1, 2),)


def test_bootstrap_records_may_finalize_supported_levels_only():
    level = lambda name, n: mpb.MetadataRecord(feature_level=mpb.FeatureLevelRecord(name=name, feature_level=n))  # noqa: E731
    check_bootstrap_records([bootstrap_marker(), level(METADATA_VERSION, 1)])
    for bad in (level(METADATA_VERSION, 2), level("no.such", 1), level("kraftlog.bootstrap", 1)):
        with pytest.raises(ValueError, match="does not support"):
            check_bootstrap_records([bootstrap_marker(), bad])
