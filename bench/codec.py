"""Client-side record codec microbenchmarks: records/s of the Python work a
producer and a consumer do per record, with no network and no broker.

Cases (100-byte values, batches of about batch.size = 16 KiB, no compression
unless --codec says otherwise):
  encode / decode            kafka_protocol.records.encode_batch / iter_batches,
                             no key and no headers
  encode_keyed / decode_keyed  the same with a 16-byte key and two headers
  producer_builder           what the producer does per record before the
                             wire: make_record, the size bound, the
                             accumulator's append, the batch's encode and
                             the delivery completions
  consumer_fetch             the consumer's decoding of one fetch answer
                             (1 MiB of batches) into ConsumerRecords

Each case runs --repeat times and the best run counts, timed in this
process's CPU time: on a shared machine wall time also counts the time spent
waiting for a core.

    python -m bench.codec [--records 200000] [--repeat 5] [--codec none] [--profile CASE]
                          [--out bench/results/codec.json]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from typing import Any, Callable


from bench.bench_results import save_results
from client.accumulator import RecordAccumulator
from client.consumer_types import TopicPartition
from client.fetcher import decode_fetched
from client.producer import make_record
from client.producer_batch import record_size_upper_bound
from client.record_future import AsyncRecordFuture, Settlement
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.compression import Codec
from kafka_protocol.records import Record, encode_batch, iter_batches

VALUE_BYTES = 100
BATCH_SIZE = 16384
FETCH_BYTES = 1 << 20  # max.partition.fetch.bytes' default: one fetch answer
TIMESTAMP = 1_700_000_000_000


def make_records(n: int, keyed: bool) -> list[Record]:
    value = os.urandom(VALUE_BYTES // 2).hex().encode()
    if not keyed:
        return [Record(None, value, TIMESTAMP + i) for i in range(n)]
    headers = (("trace-id", b"0123456789abcdef"), ("source", b"bench"))
    return [Record(b"key-%012d" % i, value, TIMESTAMP + i, headers) for i in range(n)]


def chunks(records: list[Record]) -> list[list[Record]]:
    """The records cut into batches of at most BATCH_SIZE, as the producer would."""
    per_batch = max(1, BATCH_SIZE // record_size_upper_bound(records[0]))
    return [records[i:i + per_batch] for i in range(0, len(records), per_batch)]


def encode_all(batches: list[list[Record]], codec: Codec) -> list[bytes]:
    return [encode_batch(batch, base_offset=i * 1000, codec=codec) for i, batch in enumerate(batches)]


def decode_all(data: bytes) -> int:
    return sum(len(decoded.records) for decoded in iter_batches(data))


def produce_through_builder(n: int, codec: Codec) -> int:
    """The producer's per-record path from produce()'s arguments to encoded
    batches and completed deliveries, without the network."""
    value = os.urandom(VALUE_BYTES // 2).hex().encode()
    accumulator = RecordAccumulator(batch_size=BATCH_SIZE, linger_ms=0)
    tp = ("bench", 0)
    delivered = [0]

    def done(error: Any, metadata: Any) -> None:
        delivered[0] += 1

    settlement = Settlement()
    for _ in range(n):
        record = make_record(value, None, None, None)
        accumulator.append(tp, record, record_size_upper_bound(record), AsyncRecordFuture.new(settlement, done), 0.0)
    offset = 0
    for batch in accumulator.take_all_queued():
        batch.encode(codec)
        batch.complete(offset, -1)
        offset += batch.record_count
    return delivered[0]


def fetch_answers(n: int, codec: Codec) -> list[bpb.FetchResponse.PartitionData]:
    """Fetch answers of up to FETCH_BYTES each, holding `n` records with dense offsets from 0."""
    answers, current, size, next_base = [], [], 0, 0
    for batch_records in chunks(make_records(n, keyed=False)):
        data = encode_batch(batch_records, base_offset=next_base, codec=codec)
        next_base += len(batch_records)
        if current and size + len(data) > FETCH_BYTES:
            answers.append(b"".join(current))
            current, size = [], 0
        current.append(data)
        size += len(data)
    answers.append(b"".join(current))
    return [bpb.FetchResponse.PartitionData(partition_index=0, high_watermark=next_base, records=a) for a in answers]


def consume_fetches(answers: list[bpb.FetchResponse.PartitionData]) -> int:
    tp = TopicPartition("bench", 0)
    position, total = 0, 0
    for data in answers:
        fetched = decode_fetched(tp, position, data)
        total += len(fetched.records)
        position = fetched.next_offset
    return total


def cases(n: int, codec: Codec) -> dict[str, tuple[Callable[[], int], int]]:
    """name -> (run, records it handles)."""
    plain, keyed = chunks(make_records(n, False)), chunks(make_records(n, True))
    plain_bytes, keyed_bytes = b"".join(encode_all(plain, codec)), b"".join(encode_all(keyed, codec))
    answers = fetch_answers(n, codec)
    return {
        "encode": (lambda: len(encode_all(plain, codec)), n),
        "decode": (lambda: decode_all(plain_bytes), n),
        "encode_keyed": (lambda: len(encode_all(keyed, codec)), n),
        "decode_keyed": (lambda: decode_all(keyed_bytes), n),
        "producer_builder": (lambda: produce_through_builder(n, codec), n),
        "consumer_fetch": (lambda: consume_fetches(answers), n),
    }


def best_rate(run: Callable[[], int], records: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return records / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000, help="records per case (default 200000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per case, the best counts (default 5)")
    parser.add_argument("--codec", default="none", help="compression.type (default none)")
    parser.add_argument("--only", nargs="*", help="run only these cases")
    parser.add_argument("--profile", metavar="CASE", help="profile one run of CASE with cProfile instead")
    parser.add_argument("--out", default="bench/results/codec.json")
    args = parser.parse_args()
    codec = Codec.from_name(args.codec)
    table = cases(args.records, codec)
    if args.profile:
        run, _ = table[args.profile]
        profiler = cProfile.Profile()
        profiler.runcall(run)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
        return
    results: dict[str, Any] = {"records": args.records, "value_bytes": VALUE_BYTES, "batch_size": BATCH_SIZE,
                               "codec": codec.label, "load_average": os.getloadavg()[0], "records_per_s": {}}
    for name, (run, records) in table.items():
        if args.only and name not in args.only:
            continue
        rate = best_rate(run, records, args.repeat)
        results["records_per_s"][name] = round(rate)
        print(f"{name:18} {rate:>12,.0f} records/s  ({1e6 / rate:.2f} µs/record)")
    print(f"load average {results['load_average']:.2f}; written to {save_results(args.out, results)}")


if __name__ == "__main__":
    main()
