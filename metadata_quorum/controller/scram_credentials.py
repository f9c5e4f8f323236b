"""Kafka's AlterUserScramCredentials as a controller decision (KIP-554).

The request carries, per upsertion, the salt and the salted password
(Hi(password, salt, iterations)), never the password; the controller
derives the stored and server keys (credential_from_salted_password) and
writes a UserScramCredentialRecord. A deletion writes a
RemoveUserScramCredentialRecord.

One result per user, in the order users first appear. A user's
alterations are all applied or none: the first refusal is the user's
result. Kafka's errors: DUPLICATE_RESOURCE when the same user and
mechanism are named twice; UNSUPPORTED_SASL_MECHANISM for a mechanism
other than SCRAM-SHA-256/512; UNACCEPTABLE_CREDENTIAL for an empty name,
iterations outside 4096..16384, an empty salt (or, here, one shorter than
the 12 bytes scramp's server side needs), or a salted password that is not
one digest long; RESOURCE_NOT_FOUND for deleting a credential that does
not exist. Nothing from a salt or a salted password reaches a message.
"""
from __future__ import annotations

import hashlib
from collections import Counter

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataImage
from metadata_quorum.image.security_records import remove_scram_record, scram_record
from security.acl import MAX_STRING_LENGTH
from security.scram_credentials import (
    MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism, credential_from_salted_password,
)

from .errors import ControllerError, Error
from .result import ControllerResult

MIN_SALT_BYTES = 12  # scramp refuses shorter salts when it serves a login
Deletion = cpb.AlterUserScramCredentialsRequest.Deletion
Upsertion = cpb.AlterUserScramCredentialsRequest.Upsertion


def _mechanism(code: int) -> ScramMechanism:
    try:
        return ScramMechanism(code)
    except ValueError:
        raise ControllerError(Error.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {code}") from None


def _named(name: str) -> None:
    if not name:
        raise ControllerError(Error.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if len(name) > MAX_STRING_LENGTH:
        raise ControllerError(Error.UNACCEPTABLE_CREDENTIAL,
                              f"The user name is {len(name)} characters long, at most {MAX_STRING_LENGTH} are allowed")


def upsertion_record(upsertion: Upsertion) -> mpb.MetadataRecord:
    """The record of one upsertion, or ControllerError with Kafka's refusal
    (also how `kraftlog storage format --add-scram` checks its credentials)."""
    _named(upsertion.name)
    mechanism = _mechanism(upsertion.mechanism)
    if upsertion.iterations < MIN_ITERATIONS:
        raise ControllerError(Error.UNACCEPTABLE_CREDENTIAL,
                              f"Too few iterations: {upsertion.iterations}, at least {MIN_ITERATIONS}")
    if upsertion.iterations > MAX_ITERATIONS:
        raise ControllerError(Error.UNACCEPTABLE_CREDENTIAL,
                              f"Too many iterations: {upsertion.iterations}, at most {MAX_ITERATIONS}")
    if len(upsertion.salt) < MIN_SALT_BYTES:
        raise ControllerError(Error.UNACCEPTABLE_CREDENTIAL,
                              f"The salt must be at least {MIN_SALT_BYTES} bytes long")
    digest_size = hashlib.new(mechanism.hash_name).digest_size
    if len(upsertion.salted_password) != digest_size:
        raise ControllerError(Error.UNACCEPTABLE_CREDENTIAL,
                              f"The salted password of {mechanism.mechanism_name} must be {digest_size} bytes long")
    credential = credential_from_salted_password(mechanism, upsertion.salt, upsertion.salted_password,
                                                 upsertion.iterations)
    return scram_record(upsertion.name, credential)


def _delete(image: MetadataImage, deletion: Deletion) -> mpb.MetadataRecord:
    _named(deletion.name)
    mechanism = _mechanism(deletion.mechanism)
    if image.scram_credential(deletion.name, mechanism) is None:
        raise ControllerError(Error.RESOURCE_NOT_FOUND,
                              "Attempt to delete a user credential that does not exist")
    return remove_scram_record(deletion.name, mechanism)


def alter_user_scram_credentials(image: MetadataImage, request: cpb.AlterUserScramCredentialsRequest,
                                 node_id: int) -> ControllerResult:
    response = cpb.AlterUserScramCredentialsResponse(controller_id=node_id)
    alterations: list[Deletion | Upsertion] = [*request.deletions, *request.upsertions]
    named = Counter((a.name, a.mechanism) for a in alterations)
    by_user: dict[str, list[Deletion | Upsertion]] = {}
    for alteration in alterations:
        by_user.setdefault(alteration.name, []).append(alteration)
    records: list[mpb.MetadataRecord] = []
    for user, own in by_user.items():
        result = response.results.add(user=user)
        try:
            if any(named[(a.name, a.mechanism)] > 1 for a in own):
                raise ControllerError(Error.DUPLICATE_RESOURCE,
                                      "A user credential cannot be altered twice in the same request")
            made = [_delete(image, a) if isinstance(a, Deletion) else upsertion_record(a) for a in own]
        except ControllerError as exc:
            result.error_code = exc.error
            result.error_message = exc.message
            continue
        records.extend(made)
    return ControllerResult(records, response)
