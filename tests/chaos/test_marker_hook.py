"""The marker writer's test-only hook (KRAFTLOG_TEST_MARKER_DELAY): off by
default; set, it re-sends acknowledged WriteTxnMarkers requests late (the
chaos run's delayed commit/abort); a malformed value is refused."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from broker.transactions.machine import MarkerJob
from broker.transactions.markers import TEST_MARKER_DELAY, MarkerWriter
from kraftlog_api import broker_pb2 as bpb

# A metadata image's shape as the writer reads it: topic "t", partitions 0 and 1, led by broker 2.
IMAGE = SimpleNamespace(topic=lambda name: SimpleNamespace(partitions={
    0: SimpleNamespace(leader=2), 1: SimpleNamespace(leader=2)}) if name == "t" else None)
JOB = MarkerJob("tid", 7, 3, False, frozenset({("t", 0), ("t", 1)}))


def run_writer(wait_s: float) -> list[bpb.WriteTxnMarkersRequest]:
    sent: list[bpb.WriteTxnMarkersRequest] = []

    async def remote(leader: int, request: bpb.WriteTxnMarkersRequest) -> bpb.WriteTxnMarkersResponse:
        assert leader == 2
        sent.append(request)
        marker = request.markers[0]
        return bpb.WriteTxnMarkersResponse(markers=[bpb.WriteTxnMarkersResponse.Marker(
            producer_id=marker.producer_id, topics=[bpb.WriteTxnMarkersResponse.Topic(
                name=t.name, partitions=[bpb.WriteTxnMarkersResponse.Partition(partition_index=p, error_code=0)
                                         for p in t.partition_indexes]) for t in marker.topics])])

    async def local(request: bpb.WriteTxnMarkersRequest) -> bpb.WriteTxnMarkersResponse:
        raise AssertionError("nothing is led by broker 1")

    async def main() -> None:
        writer = MarkerWriter(1, lambda: IMAGE, remote, local, backoff_s=0.001)
        assert await writer.write(JOB, 5, lambda: True)
        await asyncio.sleep(wait_s)

    asyncio.run(main())
    return sent


def test_without_the_variable_each_marker_is_sent_once(monkeypatch) -> None:
    monkeypatch.delenv(TEST_MARKER_DELAY, raising=False)
    [request] = run_writer(0.0)
    assert request.markers[0].producer_epoch == 3 and not request.markers[0].transaction_result


def test_the_hook_resends_an_acknowledged_request_late(monkeypatch) -> None:
    monkeypatch.setenv(TEST_MARKER_DELAY, "50,1,1")  # every send delayed up to 50 ms, every one re-sent
    sent = run_writer(2.0)
    assert len(sent) == 2 and sent[0] == sent[1]  # the very same request (epoch, result), again


@pytest.mark.parametrize("value", ["50", "a,b,c", "50,2,0", "-1,0.5,0.5"])
def test_a_malformed_value_is_refused(monkeypatch, value) -> None:
    monkeypatch.setenv(TEST_MARKER_DELAY, value)
    with pytest.raises(ValueError, match=TEST_MARKER_DELAY):
        run_writer(0.0)
