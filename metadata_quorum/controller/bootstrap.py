"""The bootstrap records: what `kraftlog storage format` puts in a controller's
bootstrap.checkpoint, and when the active controller appends them.

As Kafka's kafka-storage format: the records a cluster must hold before
anyone can log in (here, the first super user's SCRAM credentials from
--add-scram) are written at format time and appended by the first active
controller, as one decision (one Raft entry), led by a marker record:

    FeatureLevelRecord  name=kraftlog.bootstrap, level 1   (first, always)
    UserScramCredentialRecord ...                          (salted and hashed, never a password)
    FeatureLevelRecord  name=metadata.version, ...         (levels finalized at format time, if any)

The marker is what makes it happen once: the image keeps it among its
features (and snapshots carry it), and a controller appends only while its
image lacks it. An active controller's image holds every committed record
(controller_service.py), and decisions commit one at a time, so a second
controller, or the same one after a restart or a leadership change, sees the
marker and appends nothing, even when every controller has the file. An
entry lost with its leader before committing left no marker, so the next
active controller appends its own. (Kafka writes its bootstrap records when
the log is empty; its metadata.version record plays the marker's part.)

A log that already holds SCRAM credentials but no marker (a cluster started
before it had a bootstrap file) is not bootstrapped: that would replace
credentials an operator set.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.features import SUPPORTED, is_internal
from metadata_quorum.image import MetadataImage

from security.scram_credentials import ScramMechanism

from .errors import ControllerError, Error
from .result import MAX_RECORDS_PER_USER_OP
from .scram_credentials import upsertion_record

BOOTSTRAP_FEATURE = "kraftlog.bootstrap"
BOOTSTRAP_LEVEL = 1
# Feature levels too: what `kraftlog storage format --release-version/--feature`
# finalizes from the first start (metadata_quorum/features.py).
_ALLOWED = ("user_scram_credential", "feature_level")


def bootstrap_marker() -> mpb.MetadataRecord:
    return mpb.MetadataRecord(feature_level=mpb.FeatureLevelRecord(name=BOOTSTRAP_FEATURE,
                                                                  feature_level=BOOTSTRAP_LEVEL))


def bootstrap_records(upsertions: Iterable[cpb.AlterUserScramCredentialsRequest.Upsertion]
                      ) -> list[mpb.MetadataRecord]:
    """The marker, then one UserScramCredentialRecord per upsertion, checked as
    AlterUserScramCredentials checks them (ControllerError with Kafka's refusal)."""
    upsertions = list(upsertions)
    if len(upsertions) >= MAX_RECORDS_PER_USER_OP:  # one entry, as a user request: the marker counts too
        raise ControllerError(Error.POLICY_VIOLATION, f"{len(upsertions)} credentials: at most "
                                                      f"{MAX_RECORDS_PER_USER_OP - 1} are bootstrapped")
    records = [bootstrap_marker()]
    seen: set[tuple[str, int]] = set()
    for upsertion in upsertions:
        records.append(upsertion_record(upsertion))  # checks the mechanism first
        key = (upsertion.name, upsertion.mechanism)
        if key in seen:
            raise ControllerError(Error.DUPLICATE_RESOURCE, f"The {ScramMechanism(upsertion.mechanism).mechanism_name} "
                                  f"credential of user {upsertion.name[:64]!r} is given twice")
        seen.add(key)
    return records


def check_bootstrap_records(records: Sequence[mpb.MetadataRecord]) -> None:
    """ValueError unless the records are the marker and then only SCRAM
    credentials and feature levels this software supports."""
    if not records or records[0] != bootstrap_marker():
        raise ValueError(f"the first record is not the {BOOTSTRAP_FEATURE} marker")
    for i, record in enumerate(records[1:], 1):
        kind = record.WhichOneof("record")
        if kind not in _ALLOWED:
            raise ValueError(f"record {i} is a {kind}; only {', '.join(_ALLOWED)} records are bootstrapped")
        if kind == "feature_level":
            level = record.feature_level
            supported = SUPPORTED.get(level.name)
            if supported is None or is_internal(level.name) or not supported.supports(level.feature_level):
                raise ValueError(f"record {i} finalizes {level.name[:64]} at level {level.feature_level}, "
                                 "which this software does not support")


@dataclass(frozen=True)
class BootstrapStep:
    """What an active controller does with its bootstrap records: append `records` (maybe none), and why."""

    records: list[mpb.MetadataRecord]
    reason: str


def bootstrap_step(image: MetadataImage, records: Sequence[mpb.MetadataRecord]) -> BootstrapStep:
    if image.features.get(BOOTSTRAP_FEATURE):
        return BootstrapStep([], "the metadata log holds its bootstrap records already")
    if image.scram_credentials:
        return BootstrapStep([], "the metadata log holds SCRAM credentials but no bootstrap marker: "
                                 "it was started without bootstrap records, which are not added afterwards")
    return BootstrapStep(list(records), "first start")

