"""broker/kafka_api without a cluster: every advertised API has its adapter,
the controller id Kafka's clients see, and the call context the KafkaBroker
service reads. (Served for real in tests/kafka_protocol/test_kafka_listener.py.)"""
from __future__ import annotations

import asyncio

import grpc
import pytest

from broker.kafka_api.apis import ADAPTERS
from broker.kafka_api.context import CallAborted, KafkaCallContext
from broker.kafka_api.metadata import client_controller_id
from broker.kafka_api.sasl import SASL_APIS
from broker.request_quota import client_of
from kafka_protocol.wire import versions
from kraftlog_api import broker_pb2 as bpb


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
