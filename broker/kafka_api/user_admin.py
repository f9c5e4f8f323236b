"""SCRAM credentials and client quotas, through KafkaBrokerService:
DescribeUserScramCredentials and AlterUserScramCredentials (v0, KIP-554:
the client sends the salted password, never the password), and
DescribeClientQuotas and AlterClientQuotas (v0-v1, KIP-546). The describes
are answered from the broker's metadata image, the alters by the active
controller; a request-level refusal (no Alter / AlterConfigs on the
cluster, no controller in time) becomes every user's or entry's error.
"""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.errors import Errors
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext


async def describe_user_scram_credentials(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.DescribeUserScramCredentials(bpb.DescribeUserScramCredentialsRequest(
        users=[u.name for u in request.users or ()]), context)
    return build(response_type(request), {
        "throttle_time": 0, "error_code": answer.error_code, "error_message": answer.error_message or None,
        "results": [{"user": r.user, "error_code": r.error_code, "error_message": r.error_message or None,
                     "credential_infos": [{"mechanism": c.mechanism, "iterations": c.iterations}
                                          for c in r.credential_infos]} for r in answer.results]})


async def alter_user_scram_credentials(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.AlterUserScramCredentials(cpb.AlterUserScramCredentialsRequest(
        deletions=[cpb.AlterUserScramCredentialsRequest.Deletion(name=d.name, mechanism=d.mechanism)
                   for d in request.deletions],
        upsertions=[cpb.AlterUserScramCredentialsRequest.Upsertion(
            name=u.name, mechanism=u.mechanism, iterations=u.iterations, salt=u.salt, salted_password=u.salted_password)
            for u in request.upsertions]), context)
    if answer.results:
        results = [{"user": r.user, "error_code": r.error_code, "error_message": r.error_message or None}
                   for r in answer.results]
    else:
        users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        code = answer.error_code or Errors.UNKNOWN_SERVER_ERROR
        results = [{"user": user, "error_code": code, "error_message": answer.error_message or None}
                   for user in users]
    return build(response_type(request), {"throttle_time": 0, "results": results})


def _entity(parts: Any) -> list[cpb.ClientQuotaEntityData]:
    return [cpb.ClientQuotaEntityData(entity_type=p.entity_type, entity_name=p.entity_name) for p in parts]


def _entity_out(parts: Any) -> list[dict[str, Any]]:
    return [{"entity_type": p.entity_type, "entity_name": p.entity_name if p.HasField("entity_name") else None}
            for p in parts]


async def describe_client_quotas(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.DescribeClientQuotas(bpb.DescribeClientQuotasRequest(strict=request.strict,
        components=[bpb.DescribeClientQuotasRequest.Component(entity_type=c.entity_type, match_type=c.match_type,
                                                              match=c.match) for c in request.components]), context)
    return build(response_type(request), {
        "throttle_time": 0, "error_code": answer.error_code, "error_message": answer.error_message or None,
        # Kafka's null entries with an error
        "entries": None if answer.error_code else [
            {"entity": _entity_out(e.entity), "values": [{"key": v.key, "value": v.value} for v in e.values]}
            for e in answer.entries]})


async def alter_client_quotas(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.AlterClientQuotas(cpb.AlterClientQuotasRequest(
        validate_only=request.validate_only, entries=[cpb.AlterClientQuotasRequest.Entry(
            entity=_entity(e.entity), ops=[cpb.AlterClientQuotasRequest.Op(key=o.key, value=o.value, remove=o.remove)
                                           for o in e.ops]) for e in request.entries]), context)
    if len(answer.entries) == len(request.entries):
        entries = [{"error_code": r.error_code, "error_message": r.error_message or None,
                    "entity": _entity_out(r.entity)} for r in answer.entries]
    else:
        code = answer.error_code or Errors.UNKNOWN_SERVER_ERROR
        entries = [{"error_code": code, "error_message": answer.error_message or None,
                    "entity": [{"entity_type": p.entity_type, "entity_name": p.entity_name} for p in e.entity]}
                   for e in request.entries]
    return build(response_type(request), {"throttle_time": 0, "entries": entries})
