"""The cost of security, in one run on this machine (`make bench-security`).

Two clusters shaped as deploy/local.yaml (3 controllers + 3 brokers, topic
rf3: 6 partitions, RF 3, min.insync.replicas 2), up at the same time, their
rounds alternated:

- plaintext: PLAINTEXT everywhere, no authorizer;
- secured: devcluster/secured.py's - SSL with mTLS between nodes, a
  SASL_SSL listener for clients, the StandardAuthorizer; the client is the
  SCRAM-SHA-512 user `bench` with Write and Read on rf3 (not a super user,
  so every request is authorized against its ACLs).

`--rounds` times on each: produce `--records` 100-byte records with acks=all
and idempotence (the suite's ProduceJob: batch.size 64 KiB, linger.ms 5),
then the raw Fetch of the whole topic from the leaders, FETCH_PASSES times on
channels already connected (and logged in) (bench/cluster.py, batches left
undecoded). The medians give the ratio secured/plaintext
(the issue's goal: >= 0.8).

Then, on the secured cluster, `--logins` full SCRAM logins per mechanism
(SCRAM-SHA-256 and -512, 4096 iterations) on one open TLS channel, timed at
the client: SaslHandshake, client-first, the client's PBKDF2 and proof,
client-final, the server's signature checked. The median and p90.

    python -m bench.security_cost [--records 100000] [--rounds 3] [--logins 50]
                                  [--out bench/results/security_cost.json]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import grpc

from bench import cluster as cluster_bench
from bench.bench_results import save_results, summarize
from bench.producer import RECORD_BYTES, produce
from bench.suite import kraftlog_cluster as kl
from client.channels import open_channel
from devcluster.local_cluster import LocalCluster
from devcluster.secured import CLIENT_LISTENER, ScramUser, add_cluster_user, allow, secured_properties
from kafka_protocol.fetch_framing import broker_stub
from kraftlog_api import broker_pb2 as bpb
from security.acl import AclOperation, ResourceType
from security.client_security import ClientSecurity
from security.listeners import SecurityProtocol
from security.sasl_client import authenticate
from security.scram_credentials import DEFAULT_ITERATIONS, ScramMechanism

TOPIC = "rf3"
USER = "bench"
FETCH_PASSES = 5


def start(directory: Path, secure: bool) -> tuple[LocalCluster, Optional[ScramUser]]:
    properties = kl.local_yaml_defaults()
    if secure:
        properties.update(secured_properties(range(1, 7)))
    cluster = LocalCluster(directory, properties=properties, tls=secure,
                           client_listener=CLIENT_LISTENER if secure else None)
    try:
        cluster.start()
        cluster.wait_for_brokers(timeout=120)
        cluster.create_topic(TOPIC, kl.PARTITIONS, 3, {"min.insync.replicas": "2"}, timeout=60)
        cluster.wait_for_leaders(TOPIC, timeout=60)
        user = None
        if secure:
            acls = [allow(f"User:{USER}", operation, ResourceType.TOPIC, TOPIC)
                    for operation in (AclOperation.WRITE, AclOperation.READ)]
            user = add_cluster_user(cluster, USER, acls, probe_topic=TOPIC)
    except BaseException:
        cluster.close()
        raise
    return cluster, user


@contextmanager
def fetch_stubs(cluster: LocalCluster, user: Optional[ScramUser]) -> Iterator[Callable[[int], Any]]:
    """Broker stubs as the client sees them: the user's SASL_SSL listener, or plaintext."""
    if user is None:
        yield cluster.broker_stub
        return
    security = user.client_security()
    channels: dict[int, grpc.Channel] = {}

    def stub(broker_id: int) -> Any:
        if broker_id not in channels:
            channels[broker_id] = open_channel(cluster.client_addresses[broker_id], security)
        return broker_stub(channels[broker_id])
    try:
        yield stub
    finally:
        for channel in channels.values():
            channel.close()


def rounds(cluster: LocalCluster, user: Optional[ScramUser], records: int, count: int,
           seconds: float) -> list[dict[str, Any]]:
    bootstrap = cluster.client_bootstrap if user else cluster.bootstrap
    client = user.client_config() if user else {}
    done = []
    for _ in range(count):
        job = kl.ProduceJob(bootstrap, TOPIC, records, RECORD_BYTES, "all", True, seconds, client)
        produced = asyncio.run(produce(job))
        with fetch_stubs(cluster, user) as stub:
            # Connected and logged in before the clock starts, as the plaintext
            # stubs already are: the fetch of a few MB would otherwise time the
            # TLS handshakes and the SCRAM logins (measured apart, below).
            for broker_id in cluster.brokers:
                stub(broker_id).Metadata(bpb.MetadataRequest(topics=[TOPIC]), timeout=30)
            # The topic is a few MB: read it FETCH_PASSES times, so the rate is not one blink's.
            passes = [cluster_bench.consume_throughput(cluster, TOPIC, stub) for _ in range(FETCH_PASSES)]
            fetched = {"records": passes[0]["records"],
                       "fetched_mb_per_s": round(statistics.mean(p["fetched_mb_per_s"] for p in passes), 2)}
        done.append({"produce_records_per_s": round(produced["records"] / produced["seconds"]),
                     "produce_errors": produced["errors"] + produced["undelivered"],
                     "fetch_mb_per_s": fetched["fetched_mb_per_s"], "fetch_records": fetched["records"]})
        print(f"  produce {done[-1]['produce_records_per_s']:>8} records/s (acks=all, RF 3), "
              f"raw fetch {done[-1]['fetch_mb_per_s']:>8.1f} MB/s", flush=True)
    return done


def scram_logins(cluster: LocalCluster, user: ScramUser, logins: int) -> dict[str, Any]:
    """Milliseconds per full login, per mechanism, on one TLS channel (its handshake not counted)."""
    address = next(iter(cluster.client_addresses.values()))
    tls_only = ClientSecurity(SecurityProtocol.SSL, user.client_security().ssl)
    timings: dict[str, Any] = {}
    with open_channel(address, tls_only) as channel:
        for mechanism in ScramMechanism:
            sasl = ClientSecurity.from_config({**user.client_config(),
                                               "sasl.mechanism": mechanism.mechanism_name}).sasl
            authenticate(channel, sasl)  # warm: the channel connected, the code paths loaded
            ms = []
            for _ in range(logins):
                started = time.perf_counter()
                authenticate(channel, sasl)
                ms.append((time.perf_counter() - started) * 1000)
            timings[mechanism.mechanism_name] = {k: round(v, 3) if isinstance(v, float) else v
                                                 for k, v in summarize(ms).items()}
    return timings


def median(values: list[dict[str, Any]], key: str) -> float:
    return statistics.median(v[key] for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="records per produce round (default 100000)")
    parser.add_argument("--rounds", type=int, default=5, help="produce + fetch rounds per cluster (default 5)")
    parser.add_argument("--logins", type=int, default=50, help="SCRAM logins timed per mechanism (default 50)")
    parser.add_argument("--seconds", type=float, default=120.0, help="at most this long per produce round")
    parser.add_argument("--out", default="bench/results/security_cost.json")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    logins: dict[str, Any] = {}
    # Both clusters up at once and their rounds alternated (plaintext, secured,
    # plaintext, ...): the load of a shared machine drifts, and taking one
    # cluster's rounds after the other's would put the drift into the ratio.
    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
        clusters = {}
        try:
            for mode in ("plaintext", "secured"):
                clusters[mode] = start(Path(tmp) / mode, mode == "secured")
            for mode in clusters:
                results[mode] = []
            for _ in range(args.rounds):
                for mode, (cluster, user) in clusters.items():
                    print(f"{mode}:", end="", flush=True)
                    results[mode] += rounds(cluster, user, args.records, 1, args.seconds)
            cluster, user = clusters["secured"]
            logins = scram_logins(cluster, user, args.logins)
        finally:
            for cluster, _ in clusters.values():
                cluster.close()
    ratios = {key: round(median(results["secured"], key) / median(results["plaintext"], key), 3)
              for key in ("produce_records_per_s", "fetch_mb_per_s")}
    for key, ratio in ratios.items():
        print(f"{key}: plaintext {median(results['plaintext'], key):,.1f}, secured "
              f"{median(results['secured'], key):,.1f}: secured/plaintext {ratio:.2f} "
              f"({'meets' if ratio >= 0.8 else 'misses'} the 0.8 goal)")
    for mechanism, timing in logins.items():
        print(f"{mechanism} login ({DEFAULT_ITERATIONS} iterations): median {timing['p50']:.2f} ms, "
              f"p90 {timing['p90']:.2f} ms over {timing['count']}")
    summary = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_average": os.getloadavg()},
               "settings": {**vars(args), "record_bytes": RECORD_BYTES, "producer_settings": kl.PRODUCER_SETTINGS,
                            "secured": "SSL+mTLS between nodes, SASL_SSL SCRAM-SHA-512 client, ACLs",
                            "scram_iterations": DEFAULT_ITERATIONS},
               "rounds": results, "ratio_secured_to_plaintext": ratios, "scram_login_ms": logins}
    print(f"results: {save_results(args.out, summary)}")


if __name__ == "__main__":
    main()
