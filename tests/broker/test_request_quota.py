"""broker/request_quota.py on a real gRPC server: every RPC of a metered
servicer is measured against request_percentage, the answers that have
throttle_time_ms carry the larger of the byte-rate and request throttles,
another client id is not held, and a follower's Fetch is exempt."""
from __future__ import annotations

import time

import grpc

from broker.client_quota_manager import ClientQuotas
from broker.request_quota import RequestQuota, note_answer_throttle
from devcluster.local_processes import free_ports
from kafka_protocol import grpc_serving
from kafka_protocol.fetch_framing import throttle_time_field
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from security.authorization import NodeAuthorizer
from security.client_quotas import CLIENT_ID, REQUEST_PERCENTAGE

from .helpers import run

BYTE_THROTTLE_MS = 5
# 0.01 % of the loop: 1 ms of handler time over the 10 s minimum window
QUOTAS = {((CLIENT_ID, "busy"),): {REQUEST_PERCENTAGE: 0.01}}


class Handlers:
    """Handlers that hold the event loop for 3 ms each (blocking, as CPU work
    does); Produce and Fetch report a byte-rate throttle of their own."""

    def __init__(self) -> None:
        self.calls = 0

    def _work(self) -> None:
        self.calls += 1
        time.sleep(0.003)

    async def Metadata(self, request: bpb.MetadataRequest, context: grpc.aio.ServicerContext) -> bpb.MetadataResponse:
        self._work()
        return bpb.MetadataResponse(cluster_id="c")

    async def Produce(self, request: bpb.ProduceRequest, context: grpc.aio.ServicerContext) -> bpb.ProduceResponse:
        self._work()
        note_answer_throttle(BYTE_THROTTLE_MS)
        return bpb.ProduceResponse(throttle_time_ms=BYTE_THROTTLE_MS)

    async def Fetch(self, request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
        self._work()
        note_answer_throttle(BYTE_THROTTLE_MS)
        return bpb.FetchResponse().SerializeToString() + throttle_time_field(BYTE_THROTTLE_MS)


def test_a_client_over_its_request_quota_is_told_and_others_are_not():
    async def scenario() -> None:
        port = free_ports(1)[0]
        quotas, handlers = ClientQuotas(), Handlers()
        server = grpc.aio.server()
        grpc_serving.add_service(server, bpb.DESCRIPTOR.services_by_name["KafkaBroker"], RequestQuota(
            quotas, lambda: QUOTAS, NodeAuthorizer.allow_all()).metered(handlers, bpb.DESCRIPTOR.services_by_name["KafkaBroker"]))
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        # One connection per call: a muted connection would hold the next call back.
        channels: list[grpc.aio.Channel] = []

        def stub() -> bpb_grpc.KafkaBrokerStub:
            channels.append(grpc.aio.insecure_channel(f"127.0.0.1:{port}",
                                                      options=[("grpc.use_local_subchannel_pool", 1)]))
            return bpb_grpc.KafkaBrokerStub(channels[-1])

        def as_client(client_id: str) -> tuple[tuple[str, str], ...]:
            return ((grpc_serving.CLIENT_ID_METADATA, client_id),)

        try:
            # A follower's Fetch is a node's traffic: not measured, its answer untouched.
            follower = await stub().Fetch(bpb.FetchRequest(replica_id=2), metadata=as_client("busy"), timeout=5)
            assert follower.throttle_time_ms == BYTE_THROTTLE_MS
            assert len(quotas.request) == 0
            # 3 ms of handler time is 0.03 % over 10 s: three times the quota, throttled for one window
            assert (await stub().Metadata(bpb.MetadataRequest(), metadata=as_client("busy"), timeout=5)).cluster_id
            produced = await stub().Produce(bpb.ProduceRequest(), metadata=as_client("busy"), timeout=5)
            assert produced.throttle_time_ms == 1000
            fetched = await stub().Fetch(bpb.FetchRequest(replica_id=-1), metadata=as_client("busy"), timeout=5)
            assert fetched.throttle_time_ms == 1000  # appended to Fetch's encoded answer, replacing its own
            calm = await stub().Produce(bpb.ProduceRequest(), metadata=as_client("calm"), timeout=5)
            assert calm.throttle_time_ms == BYTE_THROTTLE_MS  # no request quota for that client id
            assert handlers.calls == 5
        finally:
            for channel in channels:
                await channel.close()
            await server.stop(0)

    run(scenario())
