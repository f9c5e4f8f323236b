"""What replication holds per replica on an idle broker (issue 21, target 6):
three ReplicaManagers in one process, `--partitions` partitions of RF 3
(100 a topic, leaders spread evenly), their ReplicaFetchers fetching from
each other's `handle_fetch` through serialized requests and answers (as
over gRPC: a parsed request is what a leader's fetch session sees), until
every follower's fetch session is incremental and parked on an idle leader.

Printed: bytes per replica (3 x partitions replicas) after the metadata is
applied (image counted once for the three brokers) and then with the
sessions; by tracemalloc (`--top` lines of the sessions' profile, and the
peak while they were made: the full fetches' passing objects, which leave
the allocator's pools fragmented), or with
`--rss`, the process's resident set instead (no tracing: what protobuf's
arenas and the allocator hold too).

    python -m bench.replica_fetch_memory [--partitions 3000] [--top 25] [--rss]
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import tracemalloc
import uuid
from pathlib import Path

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import metadata_pb2 as mpb

BROKERS = (1, 2, 3)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def metadata_records(partitions: int) -> list[mpb.MetadataRecord]:
    records = [mpb.MetadataRecord(register_broker=mpb.RegisterBrokerRecord(
        broker_id=b, incarnation_id=f"inc-{b}", broker_epoch=100 + b,
        endpoints=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9090 + b)])) for b in BROKERS]
    for t in range(partitions // 100):
        topic_id = uuid.uuid4().bytes
        records.append(mpb.MetadataRecord(topic=mpb.TopicRecord(name=f"topic-{t}", topic_id=topic_id)))
        for i in range(100):
            replicas = [1 + (t + i + k) % 3 for k in range(3)]
            records.append(mpb.MetadataRecord(partition=mpb.PartitionRecord(
                partition_id=i, topic_id=topic_id, replicas=replicas, isr=replicas, leader=replicas[0])))
    return records


async def measure(partitions: int, directory: Path, use_rss: bool, top: int) -> dict:
    from broker.config import BrokerConfig
    from broker.fetch import handle_fetch
    from broker.offsets import handle_list_offsets
    from broker.replica_fetcher import ReplicaFetcher
    from broker.replica_manager import ReplicaManager
    from broker.server import full_delta
    from metadata_quorum.image import MetadataImage
    from partition_log.log_manager import LogManager

    records = metadata_records(partitions)
    replicas_held = partitions * len(BROKERS)

    def held() -> int:
        gc.collect()
        return rss_bytes() if use_rss else tracemalloc.get_traced_memory()[0]

    if not use_rss:
        tracemalloc.start(1)
    start = held()
    image = MetadataImage()
    for offset, record in enumerate(records, 1):
        image.apply(record, offset)
    del records
    delta = full_delta(image)
    config = BrokerConfig(replica_fetch_wait_max_ms=500)
    brokers = {b: ReplicaManager(b, LogManager(directory / f"broker-{b}"), config=config) for b in BROKERS}
    for manager in brokers.values():
        manager.apply_metadata(image, delta)
    del delta
    created = held()
    before_sessions = tracemalloc.take_snapshot() if not use_rss else None
    if not use_rss:
        tracemalloc.reset_peak()

    async def fetch(leader: int, request: bpb.FetchRequest) -> bpb.FetchResponse:
        parsed = bpb.FetchRequest.FromString(request.SerializeToString())  # a leader holds what it parsed
        return bpb.FetchResponse.FromString(await handle_fetch(brokers[leader], parsed))

    async def list_offsets(leader: int, request: bpb.ListOffsetsRequest) -> bpb.ListOffsetsResponse:
        return handle_list_offsets(brokers[leader], request)

    fetchers = [ReplicaFetcher(brokers[b], fetch, list_offsets) for b in BROKERS]
    try:
        for fetcher in fetchers:
            fetcher.sync()
        # Every loop past its full fetch and two incremental ones: parked on an idle session.
        while not all(len(f._sessions) == 2 and all(s.incremental_fetches >= 2 for s in f._sessions.values())
                      for f in fetchers):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        sessions = sum(len(m.fetch_sessions) for m in brokers.values())
        with_sessions = held()
        peak = tracemalloc.get_traced_memory()[1] if not use_rss else 0
        after = tracemalloc.take_snapshot() if not use_rss else None
    finally:
        for fetcher in fetchers:
            await fetcher.close()
        if not use_rss:
            tracemalloc.stop()
        for manager in brokers.values():
            manager.log_manager.close()
    assert sessions == 6, sessions
    assert not any(p.opened for m in brokers.values() for p in m.partitions.values())
    result = {"partitions": partitions, "replicas": replicas_held, "measure": "rss" if use_rss else "tracemalloc",
              "bytes_per_replica_created": round((created - start) / replicas_held, 1),
              "bytes_per_replica_with_sessions": round((with_sessions - start) / replicas_held, 1)}
    if not use_rss:
        result["peak_bytes_per_replica_making_sessions"] = round((peak - start) / replicas_held, 1)
    if after is not None and before_sessions is not None:
        result["sessions_top"] = [str(s) for s in after.compare_to(before_sessions, "lineno")[:top]]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=3000, help="a multiple of 100")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--rss", action="store_true", help="resident set instead of tracemalloc")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replica-fetch-memory-") as directory:
        result = asyncio.run(measure(args.partitions, Path(directory), args.rss, args.top))
    print(f"{result['partitions']:,} partitions, RF 3, 3 brokers ({result['replicas']:,} replicas), "
          f"{result['measure']}: {result['bytes_per_replica_created']:.0f} B per replica created, "
          f"{result['bytes_per_replica_with_sessions']:.0f} B with followers parked on idle fetch sessions")
    if "peak_bytes_per_replica_making_sessions" in result:
        print(f"peak while the sessions were made: {result['peak_bytes_per_replica_making_sessions']:.0f} B per replica")
    for line in result.get("sessions_top", []):
        print("  ", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
