"""The metadata image: replaying records, what a delta reports, refusing a corrupt log, snapshots.

Random sequences of valid records come from `valid_record`, which looks at
the image and picks an operation that makes sense in it (a change to a
partition that exists, an unregistration with the right broker epoch...).
Hypothesis drives it for the round-trip properties; a seeded random.Random
drives it for the longer index check.
"""

from __future__ import annotations

import random
from typing import Optional, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import (
    BrokerRegistration,
    Endpoint,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
    PartitionState,
    decision_entry,
)
from metadata_quorum.controller.result import MAX_RECORDS_PER_USER_OP
from metadata_quorum.controller_service import decision_entries

T1 = bytes(range(16))
T2 = bytes(range(16, 32))
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- record builders ----

def register(broker_id: int, epoch: int, *, fenced: bool = True, rack: Optional[str] = None,
             shutdown: bool = False) -> mpb.MetadataRecord:
    rec = mpb.RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=f"inc-{broker_id}-{epoch}", broker_epoch=epoch,
        endpoints=[mpb.BrokerEndpoint(name="PLAINTEXT", host=f"b{broker_id}", port=9092 + broker_id,
                                      security_protocol="PLAINTEXT")],
        fenced=fenced, in_controlled_shutdown=shutdown)
    if rack is not None:
        rec.rack = rack
    return mpb.MetadataRecord(register_broker=rec)


def unregister(broker_id: int, epoch: int) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(unregister_broker=mpb.UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch))


def change_broker(broker_id: int, epoch: int, fenced: int = mpb.FENCING_UNCHANGED,
                  shutdown: int = mpb.CONTROLLED_SHUTDOWN_UNCHANGED) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(broker_registration_change=mpb.BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=epoch, fenced=fenced, in_controlled_shutdown=shutdown))


def topic(name: str, topic_id: bytes) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(topic=mpb.TopicRecord(name=name, topic_id=topic_id))


def partition(topic_id: bytes, partition_id: int, replicas: Sequence[int], isr: Optional[Sequence[int]] = None,
              leader: Optional[int] = None, leader_epoch: int = 0, partition_epoch: int = 0,
              **extra) -> mpb.MetadataRecord:
    isr = replicas if isr is None else isr
    leader = (isr[0] if isr else -1) if leader is None else leader
    return mpb.MetadataRecord(partition=mpb.PartitionRecord(
        topic_id=topic_id, partition_id=partition_id, replicas=replicas, isr=isr, leader=leader,
        leader_epoch=leader_epoch, partition_epoch=partition_epoch, **extra))


def change(topic_id: bytes, partition_id: int, *, isr: Optional[Sequence[int]] = None,
           leader: Optional[int] = None, replicas: Optional[Sequence[int]] = None,
           removing: Optional[Sequence[int]] = None, adding: Optional[Sequence[int]] = None,
           recovery: Optional[int] = None) -> mpb.MetadataRecord:
    rec = mpb.PartitionChangeRecord(topic_id=topic_id, partition_id=partition_id)
    if isr is not None:
        rec.isr.ids[:] = isr
    if leader is not None:
        rec.leader = leader
    if replicas is not None:
        rec.replicas.ids[:] = replicas
    if removing is not None:
        rec.removing_replicas.SetInParent()
        rec.removing_replicas.ids[:] = removing
    if adding is not None:
        rec.adding_replicas.SetInParent()
        rec.adding_replicas.ids[:] = adding
    if recovery is not None:
        rec.leader_recovery_state = recovery
    return mpb.MetadataRecord(partition_change=rec)


def remove_topic(topic_id: bytes) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(remove_topic=mpb.RemoveTopicRecord(topic_id=topic_id))


def config(resource_type: int, resource_name: str, name: str, value: Optional[str]) -> mpb.MetadataRecord:
    rec = mpb.ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=name)
    if value is not None:
        rec.value = value
    return mpb.MetadataRecord(config=rec)


def feature(name: str, level: int) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(feature_level=mpb.FeatureLevelRecord(name=name, feature_level=level))


def producer_ids(next_id: int) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(producer_ids=mpb.ProducerIdsRecord(broker_id=1, broker_epoch=0,
                                                                 next_producer_id=next_id))


NO_OP = mpb.MetadataRecord(no_op=mpb.NoOpRecord())


def replay(*records: mpb.MetadataRecord, image: Optional[MetadataImage] = None) -> tuple[MetadataImage, MetadataDelta]:
    image = image if image is not None else MetadataImage()
    delta = MetadataDelta()
    for record in records:
        image.apply(record, image.offset + 1, delta)
    return image, delta


def cluster() -> MetadataImage:
    """Three unfenced brokers and topic t1 (id T1) with two partitions on them."""
    image, _ = replay(
        register(1, 0, fenced=False), register(2, 1, fenced=False), register(3, 2, fenced=False),
        topic("t1", T1), partition(T1, 0, [1, 2, 3]), partition(T1, 1, [2, 3, 1]))
    return image


# ---- replay of each record type ----

def test_an_empty_image():
    image = MetadataImage()
    assert image.offset == -1 and image.next_producer_id == 0
    assert not image.brokers and not image.topics and not image.configs and not image.features
    assert image.topic("t") is None and image.partition(T1, 0) is None
    assert image.topic_config("t") == {} and image.cluster_config() == {}
    assert list(image.partitions_led_by(1)) == [] and list(image.to_records()) == []


def test_register_broker_replaces_the_registration():
    image, delta = replay(register(1, 10, rack="r1"))
    assert image.brokers[1] == BrokerRegistration(
        broker_id=1, incarnation_id="inc-1-10", broker_epoch=10,
        endpoints=(Endpoint("PLAINTEXT", "b1", 9093, "PLAINTEXT"),), rack="r1",
        fenced=True, in_controlled_shutdown=False)
    assert delta.changed_brokers == {1}
    replay(register(1, 20), image=image)
    assert image.brokers[1].broker_epoch == 20 and image.brokers[1].rack is None
    assert image.offset == 1


def test_broker_registration_change_fences_unfences_and_starts_shutdown():
    image, _ = replay(register(1, 5))
    assert image.brokers[1].fenced
    replay(change_broker(1, 5, fenced=mpb.UNFENCE), image=image)
    assert not image.brokers[1].fenced
    replay(change_broker(1, 5, shutdown=mpb.IN_CONTROLLED_SHUTDOWN), image=image)
    assert not image.brokers[1].fenced and image.brokers[1].in_controlled_shutdown
    _, delta = replay(change_broker(1, 5, fenced=mpb.FENCE), image=image)
    assert image.brokers[1].fenced and image.brokers[1].in_controlled_shutdown
    assert delta.changed_brokers == {1}


def test_unregister_broker_removes_it():
    image, _ = replay(register(1, 5), register(2, 6))
    _, delta = replay(unregister(1, 5), image=image)
    assert set(image.brokers) == {2} and delta.changed_brokers == {1}


def test_topic_and_partition_records():
    image = cluster()
    t = image.topic("t1")
    assert t is not None and t.topic_id == T1 and t.name == "t1" and image.topic_ids == {"t1": T1}
    assert image.partition(T1, 1) == PartitionState(replicas=(2, 3, 1), isr=(2, 3, 1), leader=2,
                                                    leader_epoch=0, partition_epoch=0)
    assert image.partition(T1, 2) is None and image.partition(T2, 0) is None
    # A PartitionRecord for an existing partition replaces it whole.
    replay(partition(T1, 1, [4, 5], leader_epoch=7, partition_epoch=9, removing_replicas=[4],
                     leader_recovery_state=mpb.RECOVERING), image=image)
    assert image.partition(T1, 1) == PartitionState(replicas=(4, 5), isr=(4, 5), leader=4, leader_epoch=7,
                                                    partition_epoch=9, leader_recovery_state=mpb.RECOVERING,
                                                    removing_replicas=(4,))


def test_partition_change_leaves_absent_fields_alone():
    image = cluster()
    replay(change(T1, 0, isr=[1, 2]), image=image)
    assert image.partition(T1, 0) == PartitionState(replicas=(1, 2, 3), isr=(1, 2), leader=1,
                                                    leader_epoch=0, partition_epoch=1)
    replay(change(T1, 0, replicas=[1, 2, 3, 4], adding=[4], removing=[3]), image=image)
    p = image.partition(T1, 0)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((1, 2, 3, 4), (1, 2), (4,), (3,))
    # An empty list that is present clears; an absent one leaves alone.
    replay(change(T1, 0, adding=[]), image=image)
    p = image.partition(T1, 0)
    assert (p.adding_replicas, p.removing_replicas, p.partition_epoch) == ((), (3,), 3)


def test_leader_epoch_bumps_only_when_the_leader_changes():
    image = cluster()
    replay(change(T1, 0, leader=2), image=image)
    p = image.partition(T1, 0)
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (2, 1, 1)
    replay(change(T1, 0, leader=2), image=image)  # same leader: no new leader epoch
    assert (image.partition(T1, 0).leader_epoch, image.partition(T1, 0).partition_epoch) == (1, 2)
    replay(change(T1, 0, isr=[2]), image=image)  # ISR shrink alone: no new leader epoch
    assert (image.partition(T1, 0).leader_epoch, image.partition(T1, 0).partition_epoch) == (1, 3)
    replay(change(T1, 0, leader=-1, isr=[]), image=image)  # offline
    p = image.partition(T1, 0)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (-1, (), 2, 4)
    replay(change(T1, 0, leader=3, isr=[3], recovery=mpb.RECOVERING), image=image)  # unclean
    p = image.partition(T1, 0)
    assert (p.leader, p.leader_epoch, p.leader_recovery_state) == (3, 3, mpb.RECOVERING)
    replay(change(T1, 0, recovery=mpb.RECOVERED), image=image)
    assert image.partition(T1, 0).leader_recovery_state == mpb.RECOVERED
    assert image.partition(T1, 1).partition_epoch == 0  # the other partition is untouched


def test_remove_topic_takes_its_partitions_and_configs():
    image = cluster()
    replay(topic("t2", T2), partition(T2, 0, [3]), config(mpb.TOPIC, "t1", "retention.ms", "1"), image=image)
    removed = image.topics[T1]
    _, delta = replay(remove_topic(T1), image=image)
    assert image.topic("t1") is None and T1 not in image.topics and "t1" not in image.topic_ids
    assert image.topic_config("t1") == {} and (mpb.TOPIC, "t1") not in image.configs
    assert delta.removed_topics == {T1: removed} and len(removed.partitions) == 2
    assert delta.changed_configs == {(mpb.TOPIC, "t1")}
    assert [(tid, pid) for tid, pid, _ in image.partitions_with_replica(3)] == [(T2, 0)]
    assert list(image.partitions_with_replica(1)) == []
    # The name may be used again, with a new id.
    replay(topic("t1", bytes(16)), image=image)
    assert image.topic_ids["t1"] == bytes(16)


def test_config_records_set_and_delete():
    image, delta = replay(config(mpb.BROKER, "", "min.insync.replicas", "2"),
                          config(mpb.TOPIC, "t1", "retention.ms", "100"),
                          config(mpb.TOPIC, "t1", "cleanup.policy", "compact"),
                          config(mpb.BROKER, "1", "log.dirs", "/x"))
    assert image.cluster_config() == {"min.insync.replicas": "2"}
    assert image.topic_config("t1") == {"retention.ms": "100", "cleanup.policy": "compact"}
    assert image.configs[(mpb.BROKER, "1")] == {"log.dirs": "/x"}
    assert delta.changed_configs == {(mpb.BROKER, ""), (mpb.TOPIC, "t1"), (mpb.BROKER, "1")}
    image.topic_config("t1")["x"] = "y"  # a copy
    assert "x" not in image.topic_config("t1")
    replay(config(mpb.TOPIC, "t1", "retention.ms", None), config(mpb.TOPIC, "t1", "nope", None), image=image)
    assert image.topic_config("t1") == {"cleanup.policy": "compact"}
    replay(config(mpb.TOPIC, "t1", "cleanup.policy", None), image=image)
    assert (mpb.TOPIC, "t1") not in image.configs


def test_features_no_op_and_producer_ids():
    image, delta = replay(feature("metadata.version", 7), feature("kraft.version", 1))
    assert image.features == {"metadata.version": 7, "kraft.version": 1}
    assert delta.changed_features == {"metadata.version", "kraft.version"}
    replay(feature("kraft.version", 0), image=image)  # level 0 removes, as in Kafka
    assert image.features == {"metadata.version": 7}
    _, delta = replay(NO_OP, image=image)
    assert delta.is_empty() and image.offset == 3
    _, delta = replay(producer_ids(1000), image=image)
    assert image.next_producer_id == 1000 and delta.producer_ids_changed and not delta.is_empty()


def test_apply_bytes_parses_then_applies():
    image = MetadataImage()
    image.apply_bytes(register(4, 0).SerializeToString(), 0)
    image.apply_bytes(memoryview(topic("t", T1).SerializeToString()), 1)
    assert 4 in image.brokers and image.topic("t") is not None and image.offset == 1


def test_a_decision_entry_replays_its_records_at_one_offset():
    """Several records of one controller decision travel as one entry (a
    MetadataRecordBatch) and replay in order at that entry's offset."""
    image = MetadataImage()
    image.apply_bytes(decision_entry([register(4, 0)]), 0)
    entry = decision_entry([topic("t", T1), partition(T1, 0, [4]), partition(T1, 1, [4])])
    assert mpb.MetadataRecord.FromString(entry).WhichOneof("record") == "batch"
    delta = MetadataDelta()
    image.apply_bytes(entry, 1, delta)
    assert image.offset == 1 and sorted(image.topic("t").partitions) == [0, 1]
    assert delta.created_topics == {T1}


def test_apply_decision_replays_records_at_one_offset_as_their_entry_does():
    """The active controller's working image takes a decision's records
    without encoding them; the result equals replaying the entry's bytes."""
    records = [topic("t", T2), partition(T2, 0, [1, 2, 3]), partition(T2, 1, [2, 3, 1])]
    direct, through_bytes = cluster(), cluster()
    offset = direct.offset + 5
    direct.apply_decision(records, offset)
    through_bytes.apply_bytes(decision_entry(records), offset)
    assert direct == through_bytes and direct.offset == offset
    with pytest.raises(MetadataReplayError, match="offsets must grow"):
        direct.apply_decision([NO_OP], offset)


def test_a_copy_is_equal_and_independent():
    image, _ = replay(config(mpb.TOPIC, "t1", "retention.ms", "1"), image=cluster())
    copy = image.copy()
    assert copy == image and copy is not image
    copy.check_index()
    replay(change(T1, 0, isr=[1, 2], leader=2), remove_topic(T1), config(mpb.BROKER, "", "a", "b"),
           change_broker(1, 0, fenced=mpb.FENCE), image=copy)
    # The original did not move: its partitions, index, configs and brokers are its own.
    assert image.topic("t1").partitions[0].leader == 1 and copy.topic("t1") is None
    assert [p for _, p, _ in image.partitions_led_by(1)] == [0]
    assert image.configs == {(mpb.TOPIC, "t1"): {"retention.ms": "1"}} and not image.brokers[1].fenced
    image.check_index()
    copy.check_index()


def test_a_batch_inside_a_batch_is_corrupt():
    image = MetadataImage()
    inner = mpb.MetadataRecord(batch=mpb.MetadataRecordBatch(records=[NO_OP]))
    with pytest.raises(MetadataReplayError, match="a batch holds another batch"):
        image.apply_bytes(mpb.MetadataRecord(batch=mpb.MetadataRecordBatch(records=[inner])).SerializeToString(), 0)


def test_controller_decisions_are_one_entry_each_and_own_work_is_split():
    records = [NO_OP] * (MAX_RECORDS_PER_USER_OP + 1)
    assert len(decision_entries(records[:MAX_RECORDS_PER_USER_OP])) == 1
    entries = decision_entries(records)
    assert len(entries) == 2 and mpb.MetadataRecord.FromString(entries[1]) == NO_OP


# ---- deltas ----

def test_delta_lists_partitions_topics_and_brokers_that_changed():
    image = cluster()
    _, delta = replay(change(T1, 0, leader=3), register(4, 9), topic("t2", T2), partition(T2, 0, [4]),
                      image=image)
    assert delta.changed_partitions == {(T1, 0), (T2, 0)}
    assert delta.created_topics == {T2} and not delta.removed_topics
    assert delta.changed_brokers == {4} and not delta.changed_configs and not delta.producer_ids_changed
    assert not delta.is_empty() and MetadataDelta().is_empty()


def test_delta_of_a_topic_created_and_removed_in_one_run_is_empty():
    image = cluster()
    _, delta = replay(topic("t2", T2), partition(T2, 0, [1]), remove_topic(T2), image=image)
    assert delta.is_empty()


def test_delta_of_a_removed_topic_names_none_of_its_partitions():
    image = cluster()
    _, delta = replay(change(T1, 0, isr=[1]), remove_topic(T1), image=image)
    assert delta.changed_partitions == set() and set(delta.removed_topics) == {T1}
    assert delta.removed_topics[T1].partitions[0].isr == (1,)


def test_apply_without_a_delta():
    image = cluster()
    image.apply(change(T1, 0, leader=2), image.offset + 1)
    assert image.partition(T1, 0).leader == 2


# ---- the broker -> partitions index ----

def test_partitions_led_by_and_with_replica():
    image = cluster()
    replay(topic("t2", T2), partition(T2, 0, [3, 1]), partition(T2, 1, [3]), image=image)
    assert [(t, p) for t, p, _ in image.partitions_led_by(3)] == [(T2, 0), (T2, 1)]
    assert [(t, p) for t, p, _ in image.partitions_led_by(1)] == [(T1, 0)]
    assert [(t, p) for t, p, _ in image.partitions_with_replica(1)] == [(T1, 0), (T1, 1), (T2, 0)]
    replay(change(T1, 0, leader=3), change(T2, 0, replicas=[3], isr=[3]), image=image)
    assert [(t, p) for t, p, _ in image.partitions_led_by(3)] == [(T1, 0), (T2, 0), (T2, 1)]
    assert [(t, p) for t, p, _ in image.partitions_with_replica(1)] == [(T1, 0), (T1, 1)]
    # The states handed out are the current ones.
    assert all(s is image.partition(t, p) for t, p, s in image.partitions_led_by(3))
    assert list(image.partitions_led_by(99)) == []


def test_the_result_may_be_walked_while_records_are_applied():
    image = cluster()
    for tid, pid, _ in image.partitions_with_replica(1):
        replay(change(tid, pid, isr=[2, 3], leader=2 if pid == 0 else None), image=image)
    replay(remove_topic(T1), image=image)
    assert list(image.partitions_with_replica(1)) == []
    image.check_index()


def test_the_index_matches_a_scan_under_random_changes():
    rng = random.Random(20240611)
    image = MetadataImage()
    chooser = RandomChooser(rng)
    most = 0
    for step in range(2500):
        image.apply(valid_record(image, chooser), step)
        most = max(most, sum(len(t.partitions) for t in image.topics.values()))
        if step % 50 == 49:
            assert_index_matches_scan(image)
    assert_index_matches_scan(image)
    assert most >= 15  # the run did build something


def assert_index_matches_scan(image: MetadataImage) -> None:
    image.check_index()
    for broker_id in range(BROKER_IDS + 2):
        everything = sorted((tid, pid, state) for tid, t in image.topics.items()
                            for pid, state in t.partitions.items())
        assert list(image.partitions_led_by(broker_id)) == [x for x in everything if x[2].leader == broker_id]
        assert list(image.partitions_with_replica(broker_id)) == [x for x in everything
                                                                  if broker_id in x[2].replicas]


# ---- a corrupt log stops the node ----

def refused(image: MetadataImage, record: mpb.MetadataRecord, *words: str) -> None:
    before_records = list(image.to_records())
    offset = image.offset + 1
    with pytest.raises(MetadataReplayError) as info:
        image.apply(record, offset, MetadataDelta())
    message = str(info.value)
    assert f"offset {offset}" in message
    for word in words:
        assert word in message, message
    assert list(image.to_records()) == before_records and image.offset == offset - 1  # untouched


def test_records_that_contradict_the_image_are_refused():
    image = cluster()
    refused(image, topic("t1", T2), "topic", "already exists")
    refused(image, topic("other", T1), "already belongs")
    refused(image, topic("short", b"\x01" * 15), "16")
    refused(image, topic("", T2), "empty topic name")
    refused(image, partition(T2, 0, [1]), "partition", "unknown topic id", T2.hex())
    refused(image, partition(T1, -1, [1]), "negative partition id")
    refused(image, change(T1, 5, isr=[1]), "partition_change", "no partition 5")
    refused(image, change(T2, 0, isr=[1]), "unknown topic id")
    refused(image, change(T1, 0, recovery=7), "leader recovery state")
    refused(image, remove_topic(T2), "remove_topic", "unknown topic id")
    refused(image, change_broker(1, 99, fenced=mpb.FENCE), "broker_registration_change", "broker epoch 0, not 99")
    refused(image, change_broker(9, 0, fenced=mpb.FENCE), "broker 9 is not registered")
    refused(image, change_broker(1, 0, fenced=9), "fencing change")
    refused(image, unregister(9, 0), "broker 9 is not registered")
    refused(image, unregister(2, 0), "broker epoch 1, not 0")
    refused(image, config(mpb.CONFIG_RESOURCE_UNKNOWN, "x", "a", "b"), "config resource type")
    refused(image, config(mpb.TOPIC, "", "a", "b"), "without a topic name")
    refused(image, feature("x", -1), "negative feature level")
    replay(producer_ids(50), image=image)
    refused(image, producer_ids(49), "move back")
    refused(image, mpb.MetadataRecord(), "no known record type")


def test_offsets_must_grow():
    image = cluster()
    for offset in (image.offset, image.offset - 1):
        with pytest.raises(MetadataReplayError, match="offsets must grow"):
            image.apply(NO_OP, offset)


def test_undecodable_bytes_are_refused():
    image = MetadataImage()
    with pytest.raises(MetadataReplayError, match="offset 0 does not parse"):
        image.apply_bytes(b"\xff\xff\xff", 0)
    with pytest.raises(MetadataReplayError, match="no known record type"):
        image.apply_bytes(b"", 0)
    assert image.offset == -1


# ---- snapshots ----

def test_snapshot_round_trip_of_a_hand_built_image():
    image = cluster()
    replay(config(mpb.BROKER, "", "a", "1"), config(mpb.TOPIC, "t1", "b", "2"), feature("metadata.version", 3),
           change(T1, 0, leader=3, isr=[3], recovery=mpb.RECOVERING, adding=[4], replicas=[1, 2, 3, 4]),
           change_broker(2, 1, fenced=mpb.FENCE, shutdown=mpb.IN_CONTROLLED_SHUTDOWN),
           register(5, 40, rack="rack-a"), producer_ids(7000), topic("empty", T2), image=image)
    copy = MetadataImage.from_snapshot(image.snapshot())
    assert copy == image and copy.offset == image.offset
    assert copy.brokers[2].fenced and copy.brokers[2].in_controlled_shutdown and copy.brokers[5].rack == "rack-a"
    copy.check_index()
    assert list(copy.partitions_led_by(3)) == list(image.partitions_led_by(3))
    # The copy goes on replaying like the original.
    for img in (image, copy):
        replay(change(T1, 0, leader=1), image=img)
    assert copy == image


def test_snapshot_of_an_empty_image():
    copy = MetadataImage.from_snapshot(MetadataImage().snapshot())
    assert copy == MetadataImage() and copy.offset == -1


def test_snapshot_records_come_in_the_documented_order():
    image = cluster()
    replay(producer_ids(5), config(mpb.BROKER, "", "a", "1"), feature("metadata.version", 3), image=image)
    kinds = [r.WhichOneof("record") for r in image.to_records()]
    assert kinds == ["feature_level", "config", "register_broker", "register_broker", "register_broker",
                     "topic", "partition", "partition", "producer_ids"]


@PROPS
@given(st.data())
def test_to_records_rebuilds_the_same_image(data):
    image = random_image(HypothesisChooser(data))
    copy = MetadataImage()
    for i, record in enumerate(image.to_records()):
        copy.apply(record, i)
    copy.offset = image.offset
    assert copy == image
    copy.check_index()


@PROPS
@given(st.data())
def test_snapshot_round_trip_of_random_images(data):
    image = random_image(HypothesisChooser(data))
    snapshot = image.snapshot()
    copy = MetadataImage.from_snapshot(snapshot)
    assert copy == image
    assert copy.snapshot() == snapshot  # records come out in the same order
    copy.check_index()


def test_every_truncation_of_a_snapshot_is_refused():
    image = cluster()
    replay(config(mpb.BROKER, "", "a", "1"), producer_ids(3), image=image)
    snapshot = image.snapshot()
    for end in range(len(snapshot)):
        with pytest.raises(MetadataReplayError, match="bad image snapshot"):
            MetadataImage.from_snapshot(snapshot[:end])


def test_every_flipped_bit_of_a_snapshot_is_refused():
    snapshot = cluster().snapshot()
    for i in range(len(snapshot)):
        for bit in (0, 7):
            damaged = bytearray(snapshot)
            damaged[i] ^= 1 << bit
            with pytest.raises(MetadataReplayError):
                MetadataImage.from_snapshot(bytes(damaged))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_is_refused(garbage):
    with pytest.raises(MetadataReplayError):
        MetadataImage.from_snapshot(garbage)


def test_a_well_framed_snapshot_of_contradicting_records_is_refused():
    from metadata_quorum.image import framing
    bad = framing.encode(5, [partition(T1, 0, [1]).SerializeToString()])
    with pytest.raises(MetadataReplayError, match="unknown topic id"):
        MetadataImage.from_snapshot(bad)
    junk = framing.encode(5, [b"\xff\xff"])
    with pytest.raises(MetadataReplayError, match="does not parse"):
        MetadataImage.from_snapshot(junk)


# ---- random valid records ----

BROKER_IDS = 6
TOPIC_NAMES = ["a", "b", "c", "d", "e"]


class RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, seq: Sequence):
        return self.rng.choice(list(seq))

    def sample(self, seq: Sequence, k: int) -> list:
        return self.rng.sample(list(seq), k)


class HypothesisChooser:
    def __init__(self, data) -> None:
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def choice(self, seq: Sequence):
        return self.data.draw(st.sampled_from(list(seq)))

    def sample(self, seq: Sequence, k: int) -> list:
        return self.data.draw(st.permutations(list(seq)))[:k]


def random_image(choose) -> MetadataImage:
    image = MetadataImage()
    offset = -1
    for _ in range(choose.integer(0, 40)):
        offset += choose.integer(1, 3)
        image.apply(valid_record(image, choose), offset)
    return image


def some_brokers(choose, at_least: int = 0) -> list[int]:
    return choose.sample(range(1, BROKER_IDS + 1), choose.integer(at_least, 4))


def valid_record(image: MetadataImage, choose) -> mpb.MetadataRecord:
    """A record that the image accepts, of a kind picked at random among those that make sense now."""
    partitions = [(tid, pid) for tid, t in image.topics.items() for pid in t.partitions]
    kinds = ["register", "topic", "config", "feature", "no_op", "producer_ids"]
    if image.brokers:
        kinds += ["broker_change", "unregister"]
    if image.topics:
        kinds += ["partition", "partition", "remove_topic"]
    if partitions:
        kinds += ["change"] * 6
    kind = choose.choice(kinds)
    if kind == "register":
        broker_id = choose.integer(1, BROKER_IDS)
        return register(broker_id, image.offset + 1, fenced=choose.choice([True, False]),
                        rack=choose.choice([None, "r1", "r2"]), shutdown=choose.choice([False, True]))
    if kind == "broker_change":
        broker = image.brokers[choose.choice(sorted(image.brokers))]
        return change_broker(broker.broker_id, broker.broker_epoch,
                             fenced=choose.choice([mpb.FENCING_UNCHANGED, mpb.FENCE, mpb.UNFENCE]),
                             shutdown=choose.choice([mpb.CONTROLLED_SHUTDOWN_UNCHANGED, mpb.IN_CONTROLLED_SHUTDOWN]))
    if kind == "unregister":
        broker = image.brokers[choose.choice(sorted(image.brokers))]
        return unregister(broker.broker_id, broker.broker_epoch)
    if kind == "topic":
        free = [n for n in TOPIC_NAMES if n not in image.topic_ids]
        if free:
            return topic(choose.choice(free), (image.offset + 1).to_bytes(16, "big"))
        return NO_OP
    if kind == "partition":
        tid = choose.choice(list(image.topics))
        replicas = some_brokers(choose, 1)
        isr = choose.sample(replicas, choose.integer(0, len(replicas)))
        leader = choose.choice(isr) if isr else -1
        return partition(tid, choose.integer(0, 4), replicas, isr, leader,
                         leader_epoch=choose.integer(0, 300), partition_epoch=choose.integer(0, 300),
                         leader_recovery_state=choose.choice([mpb.RECOVERED, mpb.RECOVERING]),
                         adding_replicas=choose.sample(replicas, choose.integer(0, 1)))
    if kind == "remove_topic":
        return remove_topic(choose.choice(list(image.topics)))
    if kind == "change":
        tid, pid = choose.choice(partitions)
        old = image.partition(tid, pid)
        fields = {}
        if choose.integer(0, 1):
            fields["replicas"] = some_brokers(choose, 1)
        replicas = fields.get("replicas", old.replicas)
        if choose.integer(0, 1):
            fields["isr"] = choose.sample(replicas, choose.integer(0, len(replicas)))
        if choose.integer(0, 1):
            fields["leader"] = choose.choice(list(fields.get("isr", old.isr)) + [-1, choose.integer(1, BROKER_IDS)])
        if choose.integer(0, 3) == 0:
            fields["adding"] = choose.sample(replicas, choose.integer(0, 1))
        if choose.integer(0, 3) == 0:
            fields["removing"] = choose.sample(replicas, choose.integer(0, 1))
        if choose.integer(0, 3) == 0:
            fields["recovery"] = choose.choice([mpb.RECOVERED, mpb.RECOVERING])
        return change(tid, pid, **fields)
    if kind == "config":
        resource = choose.choice([(mpb.BROKER, ""), (mpb.BROKER, "1")] + [(mpb.TOPIC, n) for n in TOPIC_NAMES])
        return config(*resource, choose.choice(["x", "y"]), choose.choice([None, "1", "2"]))
    if kind == "feature":
        return feature(choose.choice(["metadata.version", "kraft.version"]), choose.integer(0, 3))
    if kind == "producer_ids":
        return producer_ids(image.next_producer_id + choose.integer(0, 1000))
    return NO_OP
