"""broker/kafka_api without a cluster: every advertised API has its adapter,
the controller id Kafka's clients see, the call context the KafkaBroker
service reads, and the request metrics of a Kafka listener. (Served for real in tests/kafka_protocol/test_kafka_listener.py.)"""
from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace

import grpc
import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.fetch.v4.request import FetchRequest

from broker.kafka_api.apis import ADAPTERS, KafkaApis
from broker.kafka_api.context import CallAborted, KafkaCallContext
from broker.kafka_api.metadata import client_controller_id
from broker.kafka_api.sasl import SASL_APIS
from broker.request_quota import client_of
from kafka_protocol.errors import Errors
from kafka_protocol.wire import versions
from kafka_protocol.wire.codec import decode_request, encode_request
from kraftlog_api import broker_pb2 as bpb
from kraftlog_server.metrics.requests import RequestMetrics


def test_every_advertised_api_but_api_versions_and_sasl_has_an_adapter():
    # ApiVersions is answered from the table, SaslHandshake/SaslAuthenticate by the connection (sasl.py).
    assert set(ADAPTERS) == set(versions.ADVERTISED) - {versions.API_VERSIONS} - SASL_APIS


@pytest.mark.parametrize("controller, brokers, expected", [
    (1, [4, 5], 4),   # a controller-only node: clients cannot reach it, a broker stands in
    (5, [4, 5], 5),   # combined mode: the active controller is a broker
    (1, [], -1),
])
def test_the_controller_id_clients_see_is_a_listed_broker(controller, brokers, expected):
    answer = bpb.MetadataResponse(controller_id=controller, brokers=[bpb.MetadataResponse.Broker(node_id=b)
                                                                     for b in brokers])
    assert client_controller_id(answer) == expected


def test_the_call_context_carries_peer_and_client_id():
    context = KafkaCallContext("127.0.0.1:5000", "my-app")
    assert context.peer() == "127.0.0.1:5000"
    assert client_of(context) == (None, "my-app")
    assert client_of(KafkaCallContext("p", None)) == (None, "")
    with pytest.raises(CallAborted, match="UNAVAILABLE: starting"):
        asyncio.run(context.abort(grpc.StatusCode.UNAVAILABLE, "starting"))


def test_a_kafka_listeners_requests_are_counted_and_timed_like_grpc_ones():
    metrics = RequestMetrics()

    async def unavailable(request, context):
        await context.abort(grpc.StatusCode.UNAVAILABLE, "the broker is starting")

    apis = KafkaApis(SimpleNamespace(broker=SimpleNamespace(Fetch=unavailable, DescribeCluster=unavailable,
                                                            DescribeFeatures=unavailable)),
                     metrics.stats)
    context = KafkaCallContext("127.0.0.1:5000", "my-app")

    def call(body):
        return asyncio.run(apis.handle(decode_request(encode_request(body, 7)[4:]), context))

    assert call(ApiVersionsRequest(client_software_name="t", client_software_version="1")).error_code == 0
    # Another endpoint type than brokers is refused in the answer: an error of the request.
    refused = call(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=2))
    assert refused.error_code == Errors.UNSUPPORTED_ENDPOINT_TYPE
    for body in (DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1),
                 FetchRequest(max_wait=datetime.timedelta(0), min_bytes=1, topics=())):
        with pytest.raises(CallAborted):
            call(body)
    stats = metrics.by_request
    assert (stats["ApiVersions"].count, stats["ApiVersions"].errors) == (1, {})
    assert (stats["DescribeCluster"].count, stats["DescribeCluster"].errors) == \
        (2, {"UNSUPPORTED_ENDPOINT_TYPE": 1, "UNAVAILABLE": 1})
    assert (stats["Fetch"].count, stats["Fetch"].errors) == (1, {"UNAVAILABLE": 1})
    assert (stats["FetchConsumer"].count, stats["FetchConsumer"].errors) == (1, {})
    assert sum(stats["Fetch"].buckets) == 1 and stats["Fetch"].sum_ms >= 0


def test_api_versions_from_v3_carries_the_brokers_feature_levels():
    from types import SimpleNamespace

    from broker.kafka_api.apis import KafkaApis

    async def describe(request, context):
        return bpb.DescribeFeaturesResponse(
            supported_features=[bpb.DescribeFeaturesResponse.SupportedFeature(name="metadata.version", min_version=1,
                                                                              max_version=1)],
            finalized_features=[bpb.DescribeFeaturesResponse.FinalizedFeature(name="metadata.version",
                                                                              max_version_level=1)],
            finalized_features_epoch=17)

    async def starting(request, context):
        await context.abort(grpc.StatusCode.UNAVAILABLE, "starting")

    def ask(method, version):
        apis = KafkaApis(SimpleNamespace(broker=SimpleNamespace(DescribeFeatures=method)))
        request = SimpleNamespace(header=SimpleNamespace(api_key=versions.API_VERSIONS, api_version=version), body=None)
        return asyncio.run(apis.handle(request, KafkaCallContext("p", None)))

    answer = ask(describe, 3)
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == [("metadata.version", 1, 1)]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in answer.finalized_features] == [
        ("metadata.version", 1, 1)]
    assert answer.finalized_features_epoch == 17
    assert ask(starting, 4).supported_features == () and ask(describe, 2) == versions.api_versions_response(2)
