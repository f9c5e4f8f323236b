"""The per-record producer's own work without the network (`python -m
bench.produce_no_network [--records N] [--repetitions R]`): AsyncProducer.produce()
of 100-byte values into a 64 KiB open batch (its keyless fast path), then
what the sender does to that batch before gRPC (the compiled encode, the
seal, the Produce request's framing), 540 records a batch; prints the
process CPU ns a record of each repetition. Under callgrind, run at two
record counts, the difference of the instructions divided by the
difference of the records is the instructions a record (docs/bench.md).
"""
from __future__ import annotations

import argparse
import time

from client.producer import AsyncProducer
from client.producer_batch import ProducerBatch, encode_sections, load_compiled_encoder
from kafka_protocol.produce_framing import encode_produce_request

VALUE_BYTES = 100
PER_BATCH = 540  # what fills batch.size 65536 with 100-byte values


def run(records: int) -> float:
    """Process CPU ns a record of producing and encoding `records` records."""
    producer = AsyncProducer({"bootstrap.servers": "127.0.0.1:1", "batch.size": 65536, "enable.idempotence": False})
    codec, value, produce = producer.config.compression, bytes(VALUE_BYTES), producer.produce
    sent = serial = 0
    cpu = time.process_time()
    while sent < records:
        batch = ProducerBatch("t", serial % 6, serial, 0.0, producer._settlement)
        producer._keyless_open["t"] = batch  # as _append leaves it for the topic's sticky batch
        serial += 1
        for _ in range(PER_BATCH):
            produce("t", value)
        sent += PER_BATCH
        encode_sections([batch], codec)
        encode_produce_request(1, 30000, [("t", [(batch.partition, batch.encode(codec))])])
    return (time.process_time() - cpu) / sent * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repetitions", type=int, default=7)
    args = parser.parse_args()
    load_compiled_encoder()
    results = [run(args.records) for _ in range(args.repetitions)]
    print(" ".join(f"{r:.0f}" for r in results), f"ns a record; min {min(results):.0f}")


if __name__ == "__main__":
    main()
