"""Admin calls for client quotas, like Kafka's Admin client
(describeClientQuotas, alterClientQuotas). Descriptions are answered from
any broker's metadata image; changes are forwarded by the broker to the
controller, which checks each entry (client_quotas.py of the controller)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Optional

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from security.client_quotas import QuotaEntity, entity_parts

from .admin import ask_any_broker
from .errors import KafkaError, error_for_code, error_name

if TYPE_CHECKING:
    from .cluster import Cluster

# Kafka's ClientQuotaFilterComponent match types
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Component = tuple[str, int, Optional[str]]  # (entity type, match type, name for MATCH_EXACT)
Alteration = tuple[QuotaEntity, Mapping[str, Optional[float]]]  # entity, key -> value (None: remove)


def describe_client_quotas(cluster: "Cluster", components: Iterable[Component] = (),
                           strict: bool = False) -> dict[QuotaEntity, dict[str, float]]:
    """Entity -> its quotas, for the entities the filter matches (no components: every entity)."""
    request = bpb.DescribeClientQuotasRequest(strict=strict)
    for entity_type, match_type, name in components:
        component = request.components.add(entity_type=entity_type, match_type=match_type)
        if name is not None:
            component.match = name
    response = ask_any_broker(cluster, "DescribeClientQuotas", request)
    return {tuple((p.entity_type, p.entity_name if p.HasField("entity_name") else None) for p in e.entity):
            {v.key: v.value for v in e.values} for e in response.entries}


def alter_client_quotas(cluster: "Cluster", alterations: Iterable[Alteration],
                        validate_only: bool = False) -> list[Optional[KafkaError]]:
    """Each alteration's outcome, in order: None when applied (or, with
    validate_only, when it would be)."""
    request = cpb.AlterClientQuotasRequest(validate_only=validate_only)
    for entity, ops in alterations:
        entry = request.entries.add(entity=[cpb.ClientQuotaEntityData(**part) for part in entity_parts(entity)])
        for key, value in ops.items():
            if value is None:
                entry.ops.add(key=key, remove=True)
            else:
                entry.ops.add(key=key, value=value)
    response = ask_any_broker(cluster, "AlterClientQuotas", request)
    return [error_for_code(r.error_code, r.error_message or error_name(r.error_code)) if r.error_code else None
            for r in response.entries]
