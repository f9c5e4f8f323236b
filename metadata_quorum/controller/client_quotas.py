"""Kafka's AlterClientQuotas as a controller decision.

One result per entry, in request order, each decided on its own (Kafka's
per-entry errors): INVALID_REQUEST for an empty entity, a type named twice,
an empty name, an entity named by two entries, a key named twice in one
entry, an unknown key, or a value Kafka refuses (not > 0, NaN or infinite,
a fractional or too large byte rate); UNSUPPORTED_VERSION for an entity
type other than `user` and `client-id`. A good entry writes one
ClientQuotaRecord per key whose value changes (removing a key that is not
set, or setting a key to its current value, writes nothing, as Kafka's
ClientQuotaControlManager). validate_only decides the same and writes nothing.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataImage
from metadata_quorum.image.quota_records import entity_of, quota_record
from security.client_quotas import InvalidQuotaError, QuotaEntity, check_quota_value

from .errors import Error
from .result import ControllerResult

Entry = cpb.AlterClientQuotasRequest.Entry


def _entry_records(image: MetadataImage, entity: QuotaEntity, entry: Entry) -> list[mpb.MetadataRecord]:
    keys = Counter(op.key for op in entry.ops)
    twice = next((key for key, count in keys.items() if count > 1), None)
    if twice is not None:
        raise InvalidQuotaError(Error.INVALID_REQUEST,
                                f"Duplicate quota key {twice[:64]!r} not updating quota for this entity")
    current = image.client_quotas.get(entity, {})
    records = []
    for op in entry.ops:
        value: Optional[float] = None if op.remove else op.value
        if value is None:
            check_quota_value(op.key, 1.0)  # the key alone: a removal names a known key too
        else:
            check_quota_value(op.key, value)
        if current.get(op.key) != value:
            records.append(quota_record(entity, op.key, value))
    return records


def alter_client_quotas(image: MetadataImage, request: cpb.AlterClientQuotasRequest,
                        node_id: int) -> ControllerResult:
    response = cpb.AlterClientQuotasResponse(controller_id=node_id)
    entities: list[QuotaEntity | InvalidQuotaError] = []
    for entry in request.entries:
        try:
            entities.append(entity_of(entry.entity))
        except InvalidQuotaError as exc:
            entities.append(exc)  # the entry's result, below
    named = Counter(e for e in entities if not isinstance(e, InvalidQuotaError))
    records: list[mpb.MetadataRecord] = []
    for entry, entity in zip(request.entries, entities):
        result = response.entries.add(entity=entry.entity)
        try:
            if isinstance(entity, InvalidQuotaError):
                raise entity
            if named[entity] > 1:
                raise InvalidQuotaError(Error.INVALID_REQUEST, "The same quota entity is named twice in the request")
            made = _entry_records(image, entity, entry)
        except InvalidQuotaError as exc:
            result.error_code = exc.error
            result.error_message = str(exc)
            continue
        records.extend(made)
    return ControllerResult([] if request.validate_only else records, response)
