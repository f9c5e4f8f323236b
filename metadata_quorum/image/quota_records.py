"""Client quotas as metadata records (Kafka's ClientQuotaRecord), and back.

The image replays them into quotas by entity, the controller writes them,
snapshots write them again: one place converts, so the three agree. A
record that does not convert raises InvalidQuotaError (the image turns it
into a MetadataReplayError: the log is corrupt).
"""
from __future__ import annotations

from typing import Iterable, Optional

from kraftlog_api import metadata_pb2 as mpb
from security.client_quotas import QuotaEntity, entity_parts, quota_entity

EntityData = mpb.ClientQuotaRecord.EntityData


def entity_of(parts: Iterable[EntityData]) -> QuotaEntity:
    """The entity of a record's (or a request's) EntityData list, checked.
    Works on any message with entity_type and an optional entity_name."""
    return quota_entity((p.entity_type, p.entity_name if p.HasField("entity_name") else None) for p in parts)


def quota_record(entity: QuotaEntity, key: str, value: Optional[float]) -> mpb.MetadataRecord:
    """A record setting `key` of `entity` to `value`, or removing it (None)."""
    record = mpb.ClientQuotaRecord(entity=[EntityData(**part) for part in entity_parts(entity)], key=key)
    if value is None:
        record.remove = True
    else:
        record.value = value
    return mpb.MetadataRecord(client_quota=record)
