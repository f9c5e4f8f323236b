"""ACLs and SCRAM credentials as metadata records, and back.

The image replays AccessControlEntryRecord into an AclBinding and
UserScramCredentialRecord into a ScramCredential; the controller writes
them; snapshots write them again. One place converts both ways, so the
three agree. A record that does not convert raises ValueError (the image
turns it into a MetadataReplayError: the log is corrupt).
"""
from __future__ import annotations

from kraftlog_api import metadata_pb2 as mpb
from security.acl import (
    AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType, validate_binding,
)
from security.scram_credentials import ScramCredential, ScramMechanism

ACL_ID_BYTES = 16  # a Uuid, as Kafka's AccessControlEntryRecord.Id


def binding_from_record(rec: mpb.AccessControlEntryRecord) -> AclBinding:
    """The ACL of a record; ValueError when it is one CreateAcls would refuse (unknown codes included)."""
    binding = AclBinding(
        ResourceType.from_code(rec.resource_type), rec.resource_name, PatternType.from_code(rec.pattern_type),
        rec.principal, rec.host, AclOperation.from_code(rec.operation),
        AclPermissionType.from_code(rec.permission_type))
    validate_binding(binding)
    return binding


def acl_record(acl_id: bytes, binding: AclBinding) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(access_control_entry=mpb.AccessControlEntryRecord(
        id=acl_id, resource_type=binding.resource_type, resource_name=binding.resource_name,
        pattern_type=binding.pattern_type, principal=binding.principal, host=binding.host,
        operation=binding.operation, permission_type=binding.permission_type))


def remove_acl_record(acl_id: bytes) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(remove_access_control_entry=mpb.RemoveAccessControlEntryRecord(id=acl_id))


def mechanism_from_code(code: int) -> ScramMechanism:
    try:
        return ScramMechanism(code)
    except ValueError:
        raise ValueError(f"unknown SCRAM mechanism {code}") from None


def credential_from_record(rec: mpb.UserScramCredentialRecord) -> ScramCredential:
    """The credential of a record (never the password: the record has none)."""
    if not rec.name:
        raise ValueError("empty user name")
    if not rec.salt or not rec.stored_key or not rec.server_key:
        raise ValueError("a SCRAM credential without salt or keys")
    if rec.iterations <= 0:
        raise ValueError(f"{rec.iterations} iterations")
    return ScramCredential(mechanism_from_code(rec.mechanism), rec.salt, rec.stored_key, rec.server_key,
                           rec.iterations)


def scram_record(name: str, credential: ScramCredential) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(user_scram_credential=mpb.UserScramCredentialRecord(
        name=name, mechanism=credential.mechanism, salt=credential.salt, stored_key=credential.stored_key,
        server_key=credential.server_key, iterations=credential.iterations))


def remove_scram_record(name: str, mechanism: ScramMechanism) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(remove_user_scram_credential=mpb.RemoveUserScramCredentialRecord(
        name=name, mechanism=mechanism))
