"""What the leader's check of every produced record (partition_log/validator.py)
costs.

    python -m bench.produce_validation validator [--records 1000]
        in this process: ns per record of check_producer_batches for batches
        of 100-byte records in every codec (decompression included), beside
        kafka_protocol.records' decode of the same batch for scale.

    PYTHONPATH=TREE python -m bench.produce_validation throughput [--records 100000] [--rounds 1]
        produce throughput of the tree on PYTHONPATH (this script imports
        nothing from its own checkout: run it with an old tree's path for
        "before"): the suite's cluster (bench/suite: 3 controllers + 3
        brokers), bench/producer.py's ProduceJob, runs rf1 acks=1, rf3
        acks=all idempotent, and rf1 with zstd and with lz4 (those batches
        are now decompressed on the leader). One JSON line per run.

Compare trees by alternating them in one sitting (this machine is shared):

    for i in 1 2; do for t in /tmp/old /tmp/new; do
        PYTHONPATH=$t python -m bench.produce_validation throughput --tree $t; done; done
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = {  # name: topic, acks, enable.idempotence, compression.type
    "rf1": ("rf1", "1", False, "none"),
    "rf3-idempotent": ("rf3", "all", True, "none"),
    "rf1-zstd": ("rf1", "1", False, "zstd"),
    "rf1-lz4": ("rf1", "1", False, "lz4"),
}


def validator(records: int, repeat: int) -> None:
    from kafka_protocol.batch import iter_headers
    from kafka_protocol.compression import Codec
    from partition_log.config import LogConfig
    from kafka_protocol.records import Record, decode_batch, encode_batch
    from partition_log.validator import check_producer_batches, warm_up

    warm_up()
    now = int(time.time() * 1000)
    config = LogConfig()
    value = bytes(range(100))
    for codec in Codec:
        data = encode_batch([Record(None, value, now + i) for i in range(records)], codec=codec)
        batches = list(iter_headers(data, require_dense=True))
        started = time.perf_counter()
        for _ in range(repeat):
            check_producer_batches(data, batches, config, now)
        check_ns = (time.perf_counter() - started) / repeat / records * 1e9
        started = time.perf_counter()
        for _ in range(max(repeat // 10, 1)):
            decode_batch(data)
        decode_ns = (time.perf_counter() - started) / max(repeat // 10, 1) / records * 1e9
        print(json.dumps({"codec": codec.label, "records_per_batch": records, "batch_bytes": len(data),
                          "check_ns_per_record": round(check_ns, 1),
                          "python_decode_ns_per_record": round(decode_ns, 1),
                          "load_average": os.getloadavg()}), flush=True)


async def _produce(bootstrap: str, run: str, records: int) -> dict[str, Any]:
    from bench.suite import kraftlog_cluster as kl

    topic, acks, idempotence, compression = RUNS[run]

    class Job(kl.ProduceJob):
        def settings(self) -> dict[str, Any]:
            return {**super().settings(), "compression.type": compression}

    job = Job(bootstrap, topic, records, 100, acks, idempotence, 120.0)
    try:
        await job.prepare()
        started = time.monotonic()
        answer = await job.run()
        return {**answer, "seconds": time.monotonic() - started}
    finally:
        await job.close()


def throughput(records: int, runs: list[str], tree: str) -> None:
    from bench.suite import kraftlog_cluster as kl
    from bench.suite.parallel import cpu_seconds

    with tempfile.TemporaryDirectory(prefix="bench-validation-") as tmp:
        with kl.start_cluster(Path(tmp), 3) as cluster:
            for run in runs:
                pids = [cluster.pids[b] for b in cluster.brokers]
                cpu = sum(cpu_seconds(p) for p in pids)
                answer = asyncio.run(_produce(cluster.bootstrap, run, records))
                cpu = sum(cpu_seconds(p) for p in pids) - cpu
                print(json.dumps({"tree": tree, "run": run, "records": answer["records"],
                                  "errors": answer["errors"],
                                  "records_per_s": round(answer["records"] / answer["seconds"]),
                                  "brokers_cpu_s_per_million": round(cpu * 1e6 / max(answer["records"], 1), 2),
                                  "load_average": os.getloadavg()}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["validator", "throughput"])
    parser.add_argument("--records", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=200, help="validator: checks per codec")
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--tree", default=os.environ.get("PYTHONPATH", ""), help="a label for the output")
    args = parser.parse_args()
    if args.what == "validator":
        validator(args.records or 1000, args.repeat)
    else:
        throughput(args.records or 100_000, [r for r in args.runs.split(",") if r], args.tree)


if __name__ == "__main__":
    main()
