"""DescribeCluster and DescribeConfigs, answered from the broker's metadata image.

A setting's effective value and its source follow Kafka's precedence: a
topic's override (DYNAMIC_TOPIC_CONFIG), else the cluster-wide dynamic
default of the broker setting it falls back to
(DYNAMIC_DEFAULT_BROKER_CONFIG), else this broker's file
(STATIC_BROKER_CONFIG, reported when it differs from Kafka's default), else
Kafka's default (DEFAULT_CONFIG). The only per-broker dynamic configs
(DYNAMIC_BROKER_CONFIG) are the two replication throttle rates, which come
before the cluster-wide default of the same name; topic settings without a
broker-wide fallback (the throttled-replicas lists) are their own override
or Kafka's default.

A broker describes only its own broker settings, as in Kafka: a request
naming another broker is INVALID_REQUEST (the admin client sends it there).
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional

from kraftlog_api import broker_pb2 as bpb
from metadata_quorum.controller.dynamic_configs import DYNAMIC_CLUSTER_CONFIGS, TOPIC_CONFIG_DEFS, config_text
from metadata_quorum.image import MetadataImage
from partition_log.config import LogConfig, broker_key
from kafka_protocol.replication_throttles import RATES, UNLIMITED

from .config import KAFKA_PROPERTY_NAMES, BrokerConfig
from .errors import Error
from .metadata import client_endpoint

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

Setting = tuple[str, int]  # (value, source)


def describe_cluster(image: MetadataImage, *, cluster_id: str, controller_id: int,
                     listener: Optional[str] = None, metadata_offset: Optional[int] = None) -> bpb.DescribeClusterResponse:
    """Every registered broker, fenced or not, with where clients reach it;
    `metadata_offset`: how far this node applied the metadata log (control
    entries included), the image's last record when not given."""
    response = bpb.DescribeClusterResponse(cluster_id=cluster_id, controller_id=controller_id,
                                           metadata_offset=image.offset if metadata_offset is None
                                           else metadata_offset)
    for broker_id in sorted(image.brokers):
        broker = image.brokers[broker_id]
        endpoint = client_endpoint(broker, listener)
        out = response.brokers.add(
            broker_id=broker_id, host=endpoint.host if endpoint else "", port=endpoint.port if endpoint else -1,
            fenced=broker.fenced, in_controlled_shutdown=broker.in_controlled_shutdown,
            broker_epoch=broker.broker_epoch)
        if broker.rack is not None:
            out.rack = broker.rack
    return response


def describe_configs(image: MetadataImage, request: bpb.DescribeConfigsRequest, *, broker_id: int,
                     config: BrokerConfig,
                     may_describe: Callable[[int, str], int] = lambda resource_type, name: Error.NONE,
                     ) -> bpb.DescribeConfigsResponse:
    """`may_describe(resource type, name)`: NONE or the authorization error
    for that resource, asked before anything else (a refused caller does not
    learn whether a topic exists)."""
    response = bpb.DescribeConfigsResponse()
    for resource in request.resources:
        result = response.results.add(resource_type=resource.resource_type, resource_name=resource.resource_name)
        refused = may_describe(resource.resource_type, resource.resource_name)
        if refused != Error.NONE:
            result.error_code = refused
            continue
        settings = _settings(image, resource, broker_id, config, result)
        if settings is None:
            continue
        wanted = set(resource.configuration_keys)
        for name, (value, source), read_only in settings:
            if not wanted or name in wanted:
                result.configs.add(name=name, value=value, read_only=read_only, config_source=source,
                                   is_default=source == DEFAULT_CONFIG)
    return response


def _settings(image: MetadataImage, resource: bpb.DescribeConfigsRequest.Resource, broker_id: int,
              config: BrokerConfig, result: bpb.DescribeConfigsResponse.Result,
              ) -> Optional[list[tuple[str, Setting, bool]]]:
    """(name, (value, source), read only) of every setting of the resource; None after setting an error."""
    name = resource.resource_name
    static = static_broker_settings(config)
    if resource.resource_type == TOPIC:
        if image.topic(name) is None:
            result.error_code, result.error_message = Error.UNKNOWN_TOPIC_OR_PARTITION, "no such topic"
            return None
        return [(key, setting, False) for key, setting in topic_settings(image, name, static)]
    if resource.resource_type == BROKER:
        if name == "":  # the cluster-wide dynamic defaults only, as Kafka's --entity-default shows
            return [(key, (value, DYNAMIC_DEFAULT_BROKER_CONFIG), False)
                    for key, value in sorted(image.cluster_config().items())]
        if name != str(broker_id):
            result.error_code = Error.INVALID_REQUEST
            result.error_message = f"broker {broker_id} describes only its own settings: ask broker {name} itself"
            return None
        return sorted([(key, setting, key not in DYNAMIC_CLUSTER_CONFIGS)
                       for key, setting in broker_settings(image, static)]
                      + [(key, setting, False) for key, setting in throttle_rates(image, broker_id)])
    result.error_code = Error.INVALID_REQUEST
    result.error_message = f"resource type {resource.resource_type}: only topics (2) and brokers (4) have configs"
    return None


def static_broker_settings(config: BrokerConfig) -> dict[str, tuple[str, bool]]:
    """Broker setting -> (value from this broker's file or Kafka's default, whether it is the default)."""
    defaults = BrokerConfig()
    settings = {}
    for key in sorted(KAFKA_PROPERTY_NAMES):
        attr = key.replace(".", "_")  # BrokerConfig's fields are its Kafka names with '_' for '.'
        value, default = getattr(config, attr), getattr(defaults, attr)
        settings[key] = (config_text(value), value == default)
    default_log = LogConfig().to_mapping()
    for topic_key, value in config.log.to_mapping().items():
        settings[broker_key(topic_key)] = (config_text(value), value == default_log[topic_key])
    for definition in TOPIC_CONFIG_DEFS.values():
        if definition.broker_key is not None:
            settings.setdefault(definition.broker_key, (definition.default, True))
    return settings


def _static(static: dict[str, tuple[str, bool]], key: str) -> Setting:
    value, is_default = static[key]
    return value, DEFAULT_CONFIG if is_default else STATIC_BROKER_CONFIG


def topic_settings(image: MetadataImage, topic: str,
                   static: dict[str, tuple[str, bool]]) -> Iterator[tuple[str, Setting]]:
    overrides, cluster = image.topic_config(topic), image.cluster_config()
    for name in sorted(TOPIC_CONFIG_DEFS):
        fallback = TOPIC_CONFIG_DEFS[name].broker_key
        if name in overrides:
            yield name, (overrides[name], DYNAMIC_TOPIC_CONFIG)
        elif fallback is None:
            yield name, (TOPIC_CONFIG_DEFS[name].default, DEFAULT_CONFIG)
        elif fallback in cluster:
            yield name, (cluster[fallback], DYNAMIC_DEFAULT_BROKER_CONFIG)
        else:
            yield name, _static(static, fallback)


def broker_settings(image: MetadataImage,
                    static: dict[str, tuple[str, bool]]) -> Iterator[tuple[str, Setting]]:
    cluster = image.cluster_config()
    for key in sorted(static):
        yield key, ((cluster[key], DYNAMIC_DEFAULT_BROKER_CONFIG) if key in cluster else _static(static, key))


def throttle_rates(image: MetadataImage, broker_id: int) -> Iterator[tuple[str, Setting]]:
    """The KIP-73 rates of one broker: its own setting, else the cluster-wide default, else none."""
    own, cluster = image.broker_config(broker_id), image.cluster_config()
    for key in RATES:
        if key in own:
            yield key, (own[key], DYNAMIC_BROKER_CONFIG)
        elif key in cluster:
            yield key, (cluster[key], DYNAMIC_DEFAULT_BROKER_CONFIG)
        else:
            yield key, (str(UNLIMITED), DEFAULT_CONFIG)
