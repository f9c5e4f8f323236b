"""Three brokers replicating through ReplicaFetcher loops, in one event loop,
with handle_fetch as the transport: acks=all under concurrency, a follower
going away (ISR shrink, then expand when it returns) and a leader change."""
from __future__ import annotations

import asyncio

import pytest

from broker.config import BrokerConfig
from broker.errors import Error
from broker.offsets import handle_list_offsets
from broker.produce import append
from broker.replica_fetcher import ReplicaFetcher
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.records import iter_records

from .helpers import Cluster, batch_of, fetch_request, run, fetched

CONFIG = BrokerConfig(replica_fetch_wait_max_ms=200, replica_fetch_backoff_ms=10, replica_lag_time_max_ms=1000,
                      min_insync_replicas=2)


class Network:
    """Fetchers for every broker over in-process calls; `down` brokers neither answer nor fetch."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.down: set[int] = set()
        self.fetchers = {b: ReplicaFetcher(cluster[b], self._fetch, self._list_offsets) for b in cluster.brokers}

    async def _fetch(self, leader: int, request):
        if leader in self.down:
            raise ConnectionRefusedError(f"broker {leader} is down")
        return await fetched(self.cluster[leader], request)

    async def _list_offsets(self, leader: int, request):
        if leader in self.down:
            raise ConnectionRefusedError(f"broker {leader} is down")
        return handle_list_offsets(self.cluster[leader], request)

    def sync(self) -> None:
        for broker_id, fetcher in self.fetchers.items():
            if broker_id not in self.down:
                fetcher.sync()

    async def stop(self, broker_id: int) -> None:
        self.down.add(broker_id)
        await self.fetchers[broker_id].close()

    def start(self, broker_id: int) -> None:
        self.down.discard(broker_id)
        self.fetchers[broker_id].sync()

    async def close(self) -> None:
        for fetcher in self.fetchers.values():
            await fetcher.close()

    def settle_isr(self) -> None:
        """Play the controller for every pending ISR proposal: commit it to the image and answer."""
        for broker_id, replicas in self.cluster.brokers.items():
            request = replicas.alter_partition_request()
            if request is None or broker_id in self.down:
                continue
            response = cpb.AlterPartitionResponse()
            for t in request.topics:
                out = response.topics.add(topic_id=t.topic_id)
                name = self.cluster.image.topics[t.topic_id].name
                for p in t.partitions:
                    self.cluster.change(name, p.partition_index, isr=list(p.new_isr))
                    state = self.cluster.image.topics[t.topic_id].partitions[p.partition_index]
                    out.partitions.add(partition_index=p.partition_index, leader_id=state.leader,
                                       leader_epoch=state.leader_epoch, isr=state.isr,
                                       partition_epoch=state.partition_epoch)
            replicas.alter_partition_answered(request, response)


async def until(predicate, timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.002)


def values(cluster, broker_id):
    lg = cluster[broker_id].get("orders", 0).log
    return [r.value for data in lg.iter_reads(lg.log_start_offset, 1 << 20) for r in iter_records(data)]


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, config=CONFIG)
    c.create_topic("orders", {0: [1, 2, 3]})
    return c


def test_acks_all_under_concurrency_and_identical_logs(cluster):
    async def go():
        net = Network(cluster)
        net.sync()
        try:
            results = await asyncio.wait_for(asyncio.gather(*(
                append(cluster[1], "orders", 0, batch_of([b"%d" % i]), -1, 2000) for i in range(40))), 5)
            await until(lambda: all(cluster[b].get("orders", 0).high_watermark == 40 for b in (1, 2, 3)))
        finally:
            await net.close()
        return results
    results = run(go())
    assert all(r.error == Error.NONE for r in results)
    assert sorted(r.base_offset for r in results) == list(range(40))
    assert values(cluster, 1) == values(cluster, 2) == values(cluster, 3)


def test_a_stopped_follower_leaves_the_isr_and_rejoins_after_catching_up(cluster):
    leader = cluster[1].get("orders", 0)

    async def go():
        net = Network(cluster)
        net.sync()
        try:
            await net.stop(3)
            produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 5000))
            await asyncio.sleep(0.02)
            assert not produced.done()  # broker 3 is still in the ISR
            cluster.clock.advance(CONFIG.replica_lag_time_max_ms + 1)
            net.settle_isr()
            assert leader.isr == (1, 2)
            assert (await asyncio.wait_for(produced, 1)).error == Error.NONE
            for i in range(5):
                assert (await append(cluster[1], "orders", 0, batch_of([b"%d" % i]), -1, 2000)).error == Error.NONE
            net.start(3)
            await until(lambda: cluster[3].get("orders", 0).log.log_end_offset == 6)

            def rejoined() -> bool:
                net.settle_isr()
                return leader.isr == (1, 2, 3)
            await until(rejoined)
        finally:
            await net.close()
    run(go())
    assert values(cluster, 3) == values(cluster, 1)


def test_a_new_leader_and_the_deposed_one_converge_without_losing_acknowledged_records(cluster):
    async def go():
        net = Network(cluster)
        net.sync()
        try:
            acked = [await append(cluster[1], "orders", 0, batch_of([b"acked-%d" % i]), -1, 2000)
                     for i in range(3)]
            assert all(r.error == Error.NONE for r in acked)
            await net.stop(2)
            await net.stop(3)
            assert (await append(cluster[1], "orders", 0, batch_of([b"unacked"]), 1, 2000)).error == Error.NONE
            await net.stop(1)  # broker 1 dies; the controller elects 2 from the ISR
            cluster.change("orders", 0, leader=2, isr=[2, 3])
            net.start(2)
            net.start(3)
            net.sync()
            assert (await append(cluster[2], "orders", 0, batch_of([b"after"]), -1, 2000)).error == Error.NONE
            net.start(1)
            await until(lambda: values(cluster, 1) == values(cluster, 2))
            consumer = await fetched(cluster[2], fetch_request("orders", 0, 0, current_leader_epoch=1))
            return [r.value for r in iter_records(consumer.responses[0].partitions[0].records)]
        finally:
            await net.close()
    seen = run(go())
    assert seen == [b"acked-0", b"acked-1", b"acked-2", b"after"]
    assert values(cluster, 1) == values(cluster, 2) == values(cluster, 3) == seen


def test_a_fetcher_loop_ends_when_nothing_follows_its_leader(cluster):
    async def go():
        net = Network(cluster)
        net.sync()
        try:
            assert net.fetchers[2].leaders == [1]
            cluster.change("orders", 0, leader=2)
            net.sync()
            await until(lambda: net.fetchers[2].leaders == [] and net.fetchers[3].leaders == [2])
        finally:
            await net.close()
    run(go())
