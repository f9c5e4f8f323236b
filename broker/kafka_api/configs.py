"""DescribeConfigs (v1-v4) and IncrementalAlterConfigs (v0-v1) through
KafkaBrokerService's methods of the same names: topics (resource type 2)
and brokers (4); any other type is INVALID_REQUEST for that resource.

DescribeConfigs' answer carries each setting's effective value and source;
what the gRPC answer does not carry is left as Kafka leaves what it does
not know:
- synonyms (include_synonyms): the one setting the value comes from (the
  topic's own name for a topic override, else the broker setting it falls
  back to), not the lower-precedence ones behind it;
- config_type: UNKNOWN (0); documentation: null.
No kraftlog setting is a password, so none is sensitive.

Classic AlterConfigs (api 33, replace a resource's whole set) is not
served: the controller has no atomic replace, and a describe-then-alter
here could undo a concurrent change.
"""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build
from metadata_quorum.controller.dynamic_configs import TOPIC_CONFIG_DEFS

from .context import KafkaCallContext
from .results import ItemResults

TOPIC = 2
DYNAMIC_TOPIC_CONFIG = 1
UNKNOWN_CONFIG_TYPE = 0


async def describe_configs(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.DescribeConfigs(bpb.DescribeConfigsRequest(resources=[
        bpb.DescribeConfigsRequest.Resource(resource_type=r.resource_type, resource_name=r.resource_name,
                                            configuration_keys=r.configuration_keys or ())
        for r in request.resources]), context)
    synonyms = request.include_synonyms
    return build(response_type(request), {"throttle_time": 0, "results": [
        {"error_code": r.error_code, "error_message": r.error_message or None, "resource_type": r.resource_type,
         "resource_name": r.resource_name, "configs": [
             {"name": c.name, "value": c.value, "read_only": c.read_only, "config_source": c.config_source,
              "is_sensitive": False, "config_type": UNKNOWN_CONFIG_TYPE, "documentation": None,
              "synonyms": [{"name": synonym_name(r.resource_type, c), "value": c.value, "source": c.config_source}]
              if synonyms else ()}
             for c in r.configs]}
        for r in answer.results]})


def synonym_name(resource_type: int, config: bpb.DescribeConfigsResponse.Config) -> str:
    """The setting a value comes from: a topic's own override, else the
    broker setting the topic setting falls back to."""
    definition = TOPIC_CONFIG_DEFS.get(config.name)
    if (resource_type != TOPIC or config.config_source == DYNAMIC_TOPIC_CONFIG or definition is None
            or definition.broker_key is None):
        return config.name
    return definition.broker_key


async def incremental_alter_configs(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.IncrementalAlterConfigs(cpb.IncrementalAlterConfigsRequest(
        validate_only=request.validate_only, resources=[cpb.IncrementalAlterConfigsRequest.Resource(
            resource_type=r.resource_type, resource_name=r.resource_name, configs=[
                cpb.AlterableConfig(name=c.name, op=c.config_operation, value=c.value) for c in r.configs])
            for r in request.resources]), context)
    results = ItemResults(answer, answer.results, lambda r: (r.resource_type, r.resource_name))
    return build(response_type(request), {"throttle_time": 0, "responses": [
        dict(zip(("error_code", "error_message"), results.error((r.resource_type, r.resource_name))),
             resource_type=r.resource_type, resource_name=r.resource_name) for r in request.resources]})
