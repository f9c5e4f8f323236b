"""librdkafka beside the gRPC client, alone: the suite's cluster (3 controllers
+ 3 brokers as deploy/local.yaml, each broker with a Kafka-protocol listener;
topics rf1 and rf3 of 6 partitions) and, one client process per run, the
suite's jobs (bench/suite/librdkafka.py for confluent-kafka's settings,
bench/suite/kraftlog_cluster.py for the gRPC client's):

    grpc-rf1     kraftlog's producer, RF1 acks=1
    rdkafka-rf1  confluent-kafka's Producer, RF1 acks=1
    rdkafka-rf1-batch  the same with produce_batch(), 10,000 records a call, one partition each
    grpc-rf3     kraftlog's producer, RF3 acks=all, idempotent
    rdkafka-rf3  confluent-kafka's Producer, RF3 acks=all, idempotent
    consume-rf1  confluent-kafka's Consumer, everything in rf1, assigned
    consume-rf3  confluent-kafka's Consumer, everything in rf3, assigned
    grpc-consume kraftlog's Consumer, everything in rf3 (decoded records)

Per run: records/s, the client process's and the brokers' CPU µs per record
(from /proc), and the load average when it ended. `--profile DIR` records
py-spy (bench/producer.py's settings: raw, 200 Hz, --gil) of every broker
during each run into DIR/<run>-broker<id>.txt. `kraftlog bench` runs the
same jobs inside the side-by-side suite; this is the quick way to see one
change's effect and to profile the broker's Kafka path.

    python -m bench.kafka_clients [--records 1000000] [--runs rdkafka-rf1,consume-rf1] [--profile DIR]
                                  [--out bench/results/kafka_clients.json]
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from bench.bench_results import save_results
from bench.producer import chosen_runs, profiled
from bench.suite import kraftlog_cluster as kl
from bench.suite import librdkafka
from bench.suite.parallel import run_jobs
from devcluster.local_cluster import LocalCluster

RECORD_BYTES = 100
SECONDS = 120.0

# name -> (cluster, records) -> the job
RUNS: dict[str, Callable[[LocalCluster, int], Any]] = {
    "grpc-rf1": lambda c, n: kl.ProduceJob(kl.bootstrap(c), "rf1", n, RECORD_BYTES, "1", False, SECONDS),
    "rdkafka-rf1": lambda c, n: librdkafka.RdProduceJob(kl.kafka_bootstrap(c), "rf1", n, RECORD_BYTES, "1", False,
                                                        SECONDS),
    "rdkafka-rf1-batch": lambda c, n: librdkafka.RdProduceJob(kl.kafka_bootstrap(c), "rf1", n, RECORD_BYTES, "1",
                                                              False, SECONDS, batch_api=True),
    "grpc-rf3": lambda c, n: kl.ProduceJob(kl.bootstrap(c), "rf3", n, RECORD_BYTES, "all", True, SECONDS),
    "rdkafka-rf3": lambda c, n: librdkafka.RdProduceJob(kl.kafka_bootstrap(c), "rf3", n, RECORD_BYTES, "all", True,
                                                        SECONDS),
    "consume-rf1": lambda c, n: librdkafka.RdConsumeJob(kl.kafka_bootstrap(c), "rf1", kl.PARTITIONS, SECONDS),
    "consume-rf3": lambda c, n: librdkafka.RdConsumeJob(kl.kafka_bootstrap(c), "rf3", kl.PARTITIONS, SECONDS),
    "grpc-consume": lambda c, n: kl.ConsumeJob(kl.bootstrap(c), "rf3", librdkafka.count_records(
        kl.kafka_bootstrap(c), "rf3", kl.PARTITIONS), SECONDS),
}
DEFAULT_RUNS = "grpc-rf1,rdkafka-rf1,grpc-rf3,rdkafka-rf3,consume-rf1,consume-rf3"


def measure(cluster: LocalCluster, run: str, records: int, profile: Optional[Path]) -> dict[str, Any]:
    brokers = {f"broker{b}": cluster.pids[b] for b in cluster.brokers}
    with profiled(profile, run, brokers):
        done = run_jobs([RUNS[run](cluster, records)], SECONDS, list(brokers.values()))
    [worker] = done["workers"]
    read = max(done["records"], 1)
    return {"run": run, "records": done["records"], "seconds": round(done["seconds"], 3),
            "records_per_s": round(done["records_per_s"]),
            "client_cpu_us_per_record": round(done["client_cpu_s"] / read * 1e6, 3),
            "brokers_cpu_us_per_record": round(done["server_cpu_s"] / read * 1e6, 3),
            "errors": worker.get("errors", 0), "load_average": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help="records per produce run (default 1000000)")
    parser.add_argument("--runs", default=DEFAULT_RUNS, help="comma-separated, in order, of: " + ", ".join(RUNS))
    parser.add_argument("--profile", type=Path, default=None, help="py-spy every broker into DIR during each run")
    parser.add_argument("--out", default="bench/results/kafka_clients.json")
    args = parser.parse_args()
    runs = chosen_runs(parser, args.runs, RUNS)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-kafka-clients-") as tmp:
        with kl.start_cluster(Path(tmp), 3) as cluster:
            for run in runs:
                result = measure(cluster, run, args.records, args.profile)
                results.append(result)
                print(f"{run:13} {result['records']:>9} records {result['seconds']:>7.2f} s "
                      f"{result['records_per_s']:>9,} records/s  client {result['client_cpu_us_per_record']:6.2f} "
                      f"µs/record  brokers {result['brokers_cpu_us_per_record']:6.2f} µs/record  errors "
                      f"{result['errors']}  load {result['load_average'][0]:.2f}", flush=True)
    summary = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()}, "record_bytes": RECORD_BYTES,
               "librdkafka_producer": librdkafka.PRODUCER_SETTINGS, "librdkafka_consumer": librdkafka.CONSUMER_SETTINGS,
               "grpc_producer": kl.PRODUCER_SETTINGS, "runs": results}
    print(f"results: {save_results(args.out, summary)}")


if __name__ == "__main__":
    main()
