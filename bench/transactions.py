"""The cost of transactions, in one run on one cluster (`make bench-transactions`).

The suite's cluster (bench/suite/kraftlog_cluster.py: 3 controllers + 3
brokers as deploy/local.yaml; topic rf3: 6 partitions, RF 3,
min.insync.replicas 2; __transaction_state made on first use with its
defaults, RF 3 and min ISR 2), the client library's producer and consumer in
this process.

1. Produce: `--records` 100-byte records per round with acks=all, by the
   idempotent producer (the suite's ProduceJob: batch.size 64 KiB, linger.ms
   5) and by a transactional one with the same settings committing every 100,
   1,000 and 10,000 records (begin, produce, commit_transaction, which
   flushes and sends EndTxn). The kinds take turns round by round
   (idempotent, txn-100, txn-1000, txn-10000, then again), since the load of
   a shared machine drifts; each round's producer is new and warmed up
   (metadata, producer id, one committed transaction) before the clock
   starts. Medians of `--rounds` rounds; the ratio transactional/idempotent
   (the issue's goal: >= 0.8 at 1,000 records a transaction). A round
   starts no new transaction after `--seconds`: its rate is what it produced
   over the time it took.
2. Consume: a topic of the same shape filled with transactions of 1,000
   records, every ABORT_EVERY-th aborted (its records written, then an ABORT
   marker), read whole from the earliest offset by a new Consumer in turn
   with isolation.level read_uncommitted and read_committed (bench/consumer.py).
   The rate is the topic's data records (aborted ones too) over the time to
   reach its end, so both read the same log; read_committed returns fewer of
   them (the aborted transactions filtered out). Medians, and the ratio
   read_committed/read_uncommitted (goal: >= 0.9).

    python -m bench.transactions [--records 50000] [--rounds 3] [--sizes 100,1000,10000]
                                 [--consume-records 100000] [--out bench/results/transactions.json]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.bench_results import save_results, summarize
from bench.consumer import consume
from bench.producer import RECORD_BYTES, produce
from bench.suite import kraftlog_cluster as kl
from client.producer import AsyncProducer
from devcluster.local_cluster import LocalCluster

TOPIC = "rf3"
MIXED_TOPIC = "txn-mixed"  # committed transactions with aborted ones among them
MIXED_TXN_RECORDS = 1000
ABORT_EVERY = 10  # every 10th transaction of the mixed topic is aborted
ISOLATION = ("read_uncommitted", "read_committed")
FILL_SECONDS = CONSUME_SECONDS = 300.0


@dataclass
class TxnProduceJob(kl._ProducerJob):
    """`records` records in transactions of `per_txn`; every `abort_every`-th
    transaction (0: none) is flushed, then aborted."""
    bootstrap: str
    topic: str
    records: int
    value_bytes: int
    per_txn: int
    seconds: float
    transactional_id: str
    abort_every: int = 0

    def settings(self) -> dict[str, Any]:
        return {"acks": "all", "transactional.id": self.transactional_id}

    async def prepare(self) -> None:
        self._producer = AsyncProducer({"bootstrap.servers": self.bootstrap, **kl.PRODUCER_SETTINGS,
                                        **self.settings()})
        await self._producer.init_transactions(timeout=60)
        self._producer.begin_transaction()  # the topic's metadata, the partition added: not on the clock
        self._producer.produce(self.topic, b"warm-up")
        await self._producer.commit_transaction(timeout=60)

    async def run(self) -> dict[str, Any]:
        producer, value = self._producer, bytes(self.value_bytes)
        deadline = time.monotonic() + self.seconds
        sent = committed = transactions = 0
        commit_s: list[float] = []  # commit_transaction's time: its flush and EndTxn
        while sent < self.records and time.monotonic() < deadline:
            producer.begin_transaction()
            size = min(self.per_txn, self.records - sent)
            queued = 0
            while queued < size:
                await producer.wait_for_room()
                n = min(kl.CHUNK, size - queued)
                for _ in range(n):
                    producer.produce(self.topic, value)
                queued += n
                await asyncio.sleep(0)  # let the sender drain
            transactions += 1
            began = time.monotonic()
            if self.abort_every and transactions % self.abort_every == 0:
                if await producer.flush(timeout=120):  # written to the log, then aborted
                    raise RuntimeError("records of a transaction to abort were not delivered")
                await producer.abort_transaction(timeout=120)
            else:
                await producer.commit_transaction(timeout=120)
                committed += size
            commit_s.append(time.monotonic() - began)
            sent += size
        errors = producer.metrics()["record-error-total"]
        return {"records": sent - errors, "errors": errors, "undelivered": 0, "committed": committed,
                "transactions": transactions, "commit_ms": {k: round(v * 1000, 2) if isinstance(v, float) else v
                                                         for k, v in summarize(commit_s).items()}}


def produce_round(cluster: LocalCluster, kind: str, records: int, seconds: float, round_no: int) -> dict[str, Any]:
    """One round of `kind` (idempotent or txn-<records a transaction>): its records/s."""
    if kind == "idempotent":
        job: Any = kl.ProduceJob(cluster.bootstrap, TOPIC, records, RECORD_BYTES, "all", True, seconds)
    else:
        job = TxnProduceJob(cluster.bootstrap, TOPIC, records, RECORD_BYTES, int(kind.split("-")[1]), seconds,
                            f"bench-{kind}-{round_no}")
    answer = asyncio.run(produce(job))
    result = {"records": answer["records"], "errors": answer["errors"] + answer["undelivered"],
              "seconds": round(answer["seconds"], 3), "records_per_s": round(answer["records"] / answer["seconds"]),
              "producer_cpu_s": round(answer["cpu_s"], 3)}
    if "transactions" in answer:
        result.update(transactions=answer["transactions"], commit_ms=answer["commit_ms"])
    return result


def fill_mixed(cluster: LocalCluster, records: int, seconds: float) -> dict[str, Any]:
    """The consume topic: transactions of MIXED_TXN_RECORDS, every ABORT_EVERY-th aborted."""
    cluster.create_topic(MIXED_TOPIC, kl.PARTITIONS, 3, {"min.insync.replicas": "2"}, timeout=60)
    cluster.wait_for_leaders(MIXED_TOPIC, timeout=60)
    job = TxnProduceJob(cluster.bootstrap, MIXED_TOPIC, records, RECORD_BYTES, MIXED_TXN_RECORDS, seconds,
                        "bench-mixed", abort_every=ABORT_EVERY)
    answer = asyncio.run(produce(job))
    if answer["errors"] or answer["records"] < records:
        raise RuntimeError(f"the consume topic was not filled: {answer}")
    # The warm-up transaction's one record is committed too.
    return {"data_records": answer["records"] + 1, "committed_records": answer["committed"] + 1,
            "transactions": answer["transactions"] + 1,
            "aborted_transactions": answer["transactions"] // ABORT_EVERY}


def consume_round(cluster: LocalCluster, isolation: str, mixed: dict[str, Any], seconds: float) -> dict[str, Any]:
    expected = mixed["committed_records" if isolation == "read_committed" else "data_records"]
    run = consume(cluster.bootstrap, MIXED_TOPIC, expected, seconds, {"isolation.level": isolation})
    if run["records"] != expected:
        raise RuntimeError(f"{isolation} read {run['records']} records, not {expected}")
    # The same log for both: its data records over the time to read it.
    return {**run, "log_records_per_s": round(mixed["data_records"] / run["seconds"])}


def median(rounds: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000, help="records per produce round (default 50000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each kind, alternated (default 3)")
    parser.add_argument("--sizes", default="100,1000,10000", help="records per transaction, comma-separated")
    parser.add_argument("--consume-records", type=int, default=100_000,
                        help="records in the consume topic, aborted ones included (default 100000)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="a produce round starts no transaction after this long (default 20: txn-100 is slow)")
    parser.add_argument("--out", default="bench/results/transactions.json")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    kinds = ["idempotent", *(f"txn-{size}" for size in sizes)]
    produced: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    consumed: dict[str, list[dict[str, Any]]] = {isolation: [] for isolation in ISOLATION}
    with tempfile.TemporaryDirectory(prefix="bench-transactions-") as tmp:
        with kl.start_cluster(Path(tmp), 3) as cluster:
            for round_no in range(args.rounds):
                for kind in kinds:
                    result = produce_round(cluster, kind, args.records, args.seconds, round_no)
                    produced[kind].append(result)
                    commit = result.get("commit_ms")
                    print(f"produce {kind:>10}: {result['records_per_s']:>8} records/s"
                          + (f", {result['transactions']} transactions, commit p50 {commit['p50']:.1f} ms"
                             if commit else ""), flush=True)
            mixed = fill_mixed(cluster, args.consume_records, FILL_SECONDS)
            print(f"{MIXED_TOPIC}: {mixed['data_records']} data records, {mixed['committed_records']} committed",
                  flush=True)
            for _ in range(args.rounds):
                for isolation in ISOLATION:
                    result = consume_round(cluster, isolation, mixed, CONSUME_SECONDS)
                    consumed[isolation].append(result)
                    print(f"consume {isolation:>16}: {result['log_records_per_s']:>8} log records/s, "
                          f"{result['records_per_s']:>8} records/s returned", flush=True)
    produce_medians = {kind: median(rounds, "records_per_s") for kind, rounds in produced.items()}
    produce_ratios = {kind: round(produce_medians[kind] / produce_medians["idempotent"], 3) for kind in kinds[1:]}
    consume_medians = {isolation: median(rounds, "log_records_per_s") for isolation, rounds in consumed.items()}
    consume_ratio = round(consume_medians["read_committed"] / consume_medians["read_uncommitted"], 3)
    returned = {isolation: median(rounds, "records_per_s") for isolation, rounds in consumed.items()}
    returned_ratio = round(returned["read_committed"] / returned["read_uncommitted"], 3)
    for kind in kinds:
        ratio = produce_ratios.get(kind)
        print(f"produce {kind:>10}: median {produce_medians[kind]:>10,.0f} records/s"
              + (f", {ratio:.2f}x idempotent" + (" (goal >= 0.8)" if kind == "txn-1000" else "")
                 if ratio is not None else ""))
    for isolation in ISOLATION:
        print(f"consume {isolation:>16}: median {consume_medians[isolation]:>10,.0f} log records/s, "
              f"{returned[isolation]:>10,.0f} records/s returned")
    print(f"read_committed/read_uncommitted {consume_ratio:.2f} over the log "
          f"({'meets' if consume_ratio >= 0.9 else 'misses'} the 0.9 goal), {returned_ratio:.2f} in records returned")
    summary = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_average": os.getloadavg()},
               "settings": {**vars(args), "record_bytes": RECORD_BYTES, "producer_settings": kl.PRODUCER_SETTINGS,
                            "mixed_txn_records": MIXED_TXN_RECORDS, "abort_every": ABORT_EVERY},
               "produce": {"rounds": produced, "median_records_per_s": produce_medians,
                           "ratio_to_idempotent": produce_ratios},
               "consume": {"topic": mixed, "rounds": consumed, "median_log_records_per_s": consume_medians,
                           "median_returned_records_per_s": returned, "ratio_committed_to_uncommitted": consume_ratio,
                           "ratio_committed_to_uncommitted_returned": returned_ratio}}
    print(f"results: {save_results(args.out, summary)}")


if __name__ == "__main__":
    main()
