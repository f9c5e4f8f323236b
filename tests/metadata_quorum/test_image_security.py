"""ACLs and SCRAM credentials in the metadata image: replay, deltas, refusals, snapshots."""
from __future__ import annotations

import pytest

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataDelta, MetadataImage, MetadataReplayError
from metadata_quorum.image.security_records import (
    acl_record, remove_acl_record, remove_scram_record, scram_record,
)
from metadata_quorum.metadata_state import MetadataStateMachine
from security.acl import (
    AclBinding, AclOperation, AclPermissionType, Action, Authorizer, PatternType, ResourceType,
)
from security.scram_credentials import ScramMechanism, make_credential

A1, A2 = b"\x01" * 16, b"\x02" * 16
SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
READ_ORDERS = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
WRITE_PAY = AclBinding(ResourceType.TOPIC, "pay", PatternType.PREFIXED, "User:*", "*",
                       AclOperation.WRITE, AclPermissionType.DENY)
ALICE_256 = make_credential(SHA256, "alice-secret", 4096, salt=b"salt-salt-salt")
ALICE_512 = make_credential(SHA512, "alice-secret", 8192, salt=b"other-salt-16-by")


def replay(image: MetadataImage, *records: mpb.MetadataRecord) -> MetadataDelta:
    delta = MetadataDelta()
    for record in records:
        image.apply(record, image.offset + 1, delta)
    return delta


def test_acls_replay_by_id_and_the_delta_names_them():
    image = MetadataImage()
    delta = replay(image, acl_record(A1, READ_ORDERS), acl_record(A2, WRITE_PAY))
    assert image.acls == {A1: READ_ORDERS, A2: WRITE_PAY}
    assert delta.changed_acls == {A1, A2} and not delta.is_empty()
    delta = replay(image, remove_acl_record(A1))
    assert image.acls == {A2: WRITE_PAY} and delta.changed_acls == {A1}
    # added and removed within one run: no net change
    delta = replay(image, acl_record(A1, READ_ORDERS), remove_acl_record(A1))
    assert delta.changed_acls == set() and delta.is_empty()


def test_the_acl_index_is_built_once_per_change():
    image = MetadataImage()
    replay(image, acl_record(A1, READ_ORDERS))
    first = image.acl_index()
    assert image.acl_index() is first  # cached: no rebuild per request
    authorizer = Authorizer(first)
    assert authorizer.authorize("User:alice", "h", Action(AclOperation.READ, ResourceType.TOPIC, "orders"))
    replay(image, remove_acl_record(A1))
    second = image.acl_index()
    assert second is not first and len(second) == 0 and len(first) == 1  # the old index is untouched
    replay(image, mpb.MetadataRecord(no_op=mpb.NoOpRecord()))
    assert image.acl_index() is second  # other records keep it


def test_scram_credentials_replay_by_user_and_mechanism():
    image = MetadataImage()
    delta = replay(image, scram_record("alice", ALICE_256), scram_record("alice", ALICE_512))
    assert image.scram_credential("alice", SHA256) == ALICE_256
    assert image.scram_credential("alice", SHA512) == ALICE_512
    assert delta.changed_scram_credentials == {("alice", SHA256), ("alice", SHA512)}
    newer = make_credential(SHA256, "new-secret", 4096)
    replay(image, scram_record("alice", newer))  # an upsert replaces
    assert image.scram_credential("alice", SHA256) == newer
    delta = replay(image, remove_scram_record("alice", SHA256))
    assert image.scram_credential("alice", SHA256) is None and delta.changed_scram_credentials == {("alice", SHA256)}


def refused(image: MetadataImage, record: mpb.MetadataRecord, *words: str) -> str:
    before = list(image.to_records())
    with pytest.raises(MetadataReplayError) as info:
        image.apply(record, image.offset + 1, MetadataDelta())
    for word in words:
        assert word in str(info.value), str(info.value)
    if record.WhichOneof("record") != "batch":
        assert list(image.to_records()) == before
    return str(info.value)


def test_contradicting_records_are_refused():
    image = MetadataImage()
    replay(image, acl_record(A1, READ_ORDERS), scram_record("alice", ALICE_256))
    refused(image, acl_record(A1, WRITE_PAY), "already exists")
    refused(image, acl_record(b"\x03" * 15, WRITE_PAY), "15 bytes")
    refused(image, remove_acl_record(A2), "unknown ACL id")
    bad = acl_record(A2, READ_ORDERS)
    bad.access_control_entry.operation = 99
    refused(image, bad, "Invalid operation UNKNOWN")
    bad = acl_record(A2, READ_ORDERS)
    bad.access_control_entry.pattern_type = PatternType.MATCH
    refused(image, bad, "Invalid patternType MATCH")
    bad = acl_record(A2, READ_ORDERS)
    bad.access_control_entry.principal = "alice"
    refused(image, bad, "principal")
    refused(image, remove_scram_record("alice", SHA512), "no SCRAM-SHA-512 credential")
    refused(image, remove_scram_record("bob", SHA256), "'bob'")
    unknown = scram_record("bob", ALICE_256)
    unknown.user_scram_credential.mechanism = 7
    refused(image, unknown, "unknown SCRAM mechanism 7")
    unnamed = scram_record("", ALICE_256)
    refused(image, unnamed, "empty user name")


def test_errors_never_carry_salts_or_keys():
    image = MetadataImage()
    record = scram_record("", ALICE_512)
    message = refused(image, record)
    batch = mpb.MetadataRecord(batch=mpb.MetadataRecordBatch(records=[scram_record("ok", ALICE_256), record]))
    message += refused(MetadataImage(), batch)  # (a batch that fails midway stops the node; no untouched check)
    for secret in (ALICE_512.salt, ALICE_512.stored_key, ALICE_512.server_key, ALICE_256.stored_key):
        for form in (repr(secret)[2:-1], secret.hex()):
            assert form not in message
    assert "salt" not in repr(ALICE_512) and "key" not in repr(ALICE_512)


def test_snapshots_carry_acls_and_credentials_through_a_restart():
    machine = MetadataStateMachine()
    machine.apply([(0, acl_record(A1, READ_ORDERS).SerializeToString()),
                   (1, acl_record(A2, WRITE_PAY).SerializeToString()),
                   (2, scram_record("alice", ALICE_256).SerializeToString()),
                   (3, scram_record("bob", ALICE_512).SerializeToString()),
                   (4, remove_acl_record(A1).SerializeToString())])
    data = machine.snapshot()
    restarted = MetadataStateMachine()
    seen: list[MetadataDelta] = []
    restarted.add_listener(lambda image, delta: seen.append(delta))
    restarted.load_snapshot(data)
    image = restarted.image
    assert image == machine.image and image.offset == 4
    assert image.acls == {A2: WRITE_PAY}
    assert image.scram_credential("bob", SHA512) == ALICE_512
    assert seen and seen[0].changed_acls == {A2} and seen[0].changed_scram_credentials == {
        ("alice", SHA256), ("bob", SHA512)}
    # the restarted image goes on replaying like the original
    for img in (machine.image, image):
        img.apply(remove_scram_record("alice", SHA256), 5)
    assert image == machine.image
