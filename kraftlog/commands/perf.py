"""`kraftlog perf produce|consume`: Kafka's kafka-producer-perf-test and
kafka-consumer-perf-test over the client's Producer and Consumer.

produce prints a line per reporting interval and a summary in Kafka's words
(records/sec, MB/sec, average and maximum latency, 50th/95th/99th/99.9th
percentiles), latency being the time from produce() to the acknowledgement;
consume prints Kafka's one-line CSV summary. On a terminal a progress bar
runs on stderr; --json prints only the summary, as one object.
"""
from __future__ import annotations

import random
import string
import threading
import time
from contextlib import contextmanager
from typing import Annotated, Any, Callable, Iterator, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from client.consumer import Consumer, TopicPartition
from client.producer import Producer

from .common import BootstrapOption, JsonOption, print_json
from .console import (
    AcksOption, ConsumerConfigFile, DeliveryTally, ProducerConfigFile, consumer_settings, consumer_topic_partitions,
    producer_settings, producer_topic_partitions,
)

MB = 1024 * 1024
PROGRESS_EVERY = 1000  # records between two progress-bar updates (an update costs more than a record)
ProducerProps = Annotated[list[str], typer.Option(
    "--producer-props", "--producer-property", metavar="K=V[,K=V...]", help="Producer settings, e.g. linger.ms=20.")]
ConsumerProps = Annotated[list[str], typer.Option(
    "--consumer-props", "--consumer-property", metavar="K=V[,K=V...]", help="Consumer settings.")]
perf_app = typer.Typer(help="Throughput and latency tests, like Kafka's perf-test tools.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(perf_app, name="perf")


def percentile(ordered: list[float], q: float) -> float:
    """Kafka's perf-test percentile: the element at index int(n * q) of the sorted sample."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


class LatencyStats:
    """Acknowledgement latencies (ms) overall and per reporting window; fed from the producer's I/O thread."""

    def __init__(self, record_size: int) -> None:
        self.lock = threading.Lock()
        self.record_size = record_size
        self.latencies: list[float] = []
        self.window: list[float] = []
        self.window_start = time.monotonic()

    def completion(self, tally: DeliveryTally) -> "Acknowledged":
        return Acknowledged(self, tally, time.monotonic())

    def acknowledged(self, sent_at: float) -> None:
        latency = (time.monotonic() - sent_at) * 1000
        with self.lock:
            self.latencies.append(latency)
            self.window.append(latency)

    def take_window(self) -> str:
        """Kafka's interval line for the records acknowledged since the last one."""
        with self.lock:
            window, self.window = self.window, []
        now = time.monotonic()
        elapsed, self.window_start = max(now - self.window_start, 1e-9), now
        rate = len(window) / elapsed
        return (f"{len(window)} records sent, {rate:.1f} records/sec ({rate * self.record_size / MB:.2f} MB/sec), "
                f"{_mean(window):.1f} ms avg latency, {max(window, default=0.0):.1f} ms max latency.")

    def summary(self, elapsed_s: float) -> dict[str, Any]:
        with self.lock:
            ordered = sorted(self.latencies)
        rate = len(ordered) / max(elapsed_s, 1e-9)
        return {
            "records": len(ordered), "records_per_sec": round(rate, 2),
            "mb_per_sec": round(rate * self.record_size / MB, 2),
            "avg_latency_ms": round(_mean(ordered), 2), "max_latency_ms": round(ordered[-1] if ordered else 0.0, 2),
            "p50_ms": round(percentile(ordered, 0.5)), "p95_ms": round(percentile(ordered, 0.95)),
            "p99_ms": round(percentile(ordered, 0.99)), "p999_ms": round(percentile(ordered, 0.999)),
        }


class Acknowledged:
    """One record's on_delivery: a slotted object rather than a closure (no cell per captured name)."""

    __slots__ = ("stats", "tally", "sent_at")

    def __init__(self, stats: LatencyStats, tally: DeliveryTally, sent_at: float) -> None:
        self.stats, self.tally, self.sent_at = stats, tally, sent_at

    def __call__(self, error: Any, metadata: Any) -> None:
        self.tally(error, metadata)
        if error is None:
            self.stats.acknowledged(self.sent_at)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@contextmanager
def _progress(total: int, what: str, quiet: bool) -> Iterator[Callable[[int], None]]:
    """advance(n) of a progress bar on stderr - only on a terminal."""
    console = Console(stderr=True)
    progress = Progress(what, BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                        disable=quiet or not console.is_terminal)
    with progress:
        task = progress.add_task(what, total=total)
        yield lambda n: progress.advance(task, n)


@perf_app.command("produce")
def produce(
    topic: Annotated[str, typer.Option("--topic", help="Topic to write to.", show_default=False)],
    num_records: Annotated[int, typer.Option("--num-records", min=1, help="Records to send.", show_default=False)],
    record_size: Annotated[int, typer.Option("--record-size", min=0, help="Bytes per record value.",
                                             show_default=False)],
    throughput: Annotated[float, typer.Option(
        "--throughput", help="At most this many records/sec (-1: as fast as possible).", show_default=False)],
    acks: AcksOption = None,
    producer_props: ProducerProps = [],
    producer_config: ProducerConfigFile = None,
    reporting_interval_ms: Annotated[int, typer.Option("--reporting-interval", min=1,
                                                       help="Ms between interval lines.")] = 5000,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
) -> None:
    """Send records of a fixed size at a paced rate; print throughput and acknowledgement latency."""
    settings = producer_settings(bootstrap, producer_config, producer_props, acks=acks)  # --producer-props win
    producer_topic_partitions(settings, topic)
    payload = "".join(random.choices(string.ascii_uppercase, k=record_size)).encode()
    tally, stats = DeliveryTally(), LatencyStats(record_size)
    start = time.monotonic()
    next_report = start + reporting_interval_ms / 1000
    with Producer(settings) as producer, _progress(num_records, "producing", as_json) as advance:
        for sent in range(num_records):
            producer.produce(topic, payload, on_delivery=stats.completion(tally))
            if sent % PROGRESS_EVERY == PROGRESS_EVERY - 1:
                advance(PROGRESS_EVERY)
            now = time.monotonic()
            if throughput > 0:
                ahead = (sent + 1) / throughput - (now - start)
                if ahead > 0.001:
                    time.sleep(ahead)
            if now >= next_report and not as_json:
                print(stats.take_window(), flush=True)
                next_report = now + reporting_interval_ms / 1000
        advance(num_records % PROGRESS_EVERY)
        producer.flush()
    summary = {**stats.summary(time.monotonic() - start), "failed": tally.failed}
    if as_json:
        print_json(summary)
    else:
        print(f"{summary['records']} records sent, {summary['records_per_sec']} records/sec "
              f"({summary['mb_per_sec']:.2f} MB/sec), {summary['avg_latency_ms']:.2f} ms avg latency, "
              f"{summary['max_latency_ms']:.2f} ms max latency, {summary['p50_ms']} ms 50th, "
              f"{summary['p95_ms']} ms 95th, {summary['p99_ms']} ms 99th, {summary['p999_ms']} ms 99.9th.")
    problem = tally.problem()
    if problem:
        typer.echo(f"kraftlog: error: {problem}", err=True)
        raise typer.Exit(1)


@perf_app.command("consume")
def consume(
    topic: Annotated[str, typer.Option("--topic", help="Topic to read.", show_default=False)],
    messages: Annotated[int, typer.Option("--messages", min=1, help="Records to read.", show_default=False)],
    group: Annotated[Optional[str], typer.Option("--group", help="Read as a member of this group.",
                                                 show_default=False)] = None,
    from_latest: Annotated[bool, typer.Option("--from-latest", help="Start at the end, not the beginning.")] = False,
    timeout_ms: Annotated[int, typer.Option("--timeout", help="Give up when no record came for this long (ms).")
                          ] = 10000,
    consumer_props: ConsumerProps = [],
    consumer_config: ConsumerConfigFile = None,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
) -> None:
    """Read --messages records as fast as possible; print Kafka's consumer perf summary."""
    reset = "latest" if from_latest else "earliest"
    settings = consumer_settings(bootstrap, consumer_config, consumer_props,
                                 **{"auto.offset.reset": reset, "group.id": group})
    partitions = consumer_topic_partitions(settings, topic)
    consumer = Consumer(settings)
    count = size = 0
    start = time.monotonic()
    joined = start
    try:
        if group is None:
            consumer.assign([TopicPartition(topic, p) for p in partitions])
        else:
            consumer.subscribe([topic])
        last = time.monotonic()
        with _progress(messages, "consuming", as_json) as advance:
            while count < messages and time.monotonic() - last < timeout_ms / 1000:
                records = consumer.poll(0.2)[: messages - count]
                if records:
                    if count == 0 and group is not None:
                        joined = time.monotonic()  # Kafka counts the wait for an assignment as rebalance time
                    last = time.monotonic()
                    count += len(records)
                    size += sum(len(r.value or b"") + len(r.key or b"") for r in records)
                    advance(len(records))
    finally:
        consumer.close()
    end = time.monotonic()
    elapsed, fetching = max(end - start, 1e-9), max(end - joined, 1e-9)
    summary = {
        "start_time_ms": int((time.time() - elapsed) * 1000), "end_time_ms": int(time.time() * 1000),
        "data_consumed_mb": round(size / MB, 4), "mb_per_sec": round(size / MB / elapsed, 4),
        "records": count, "records_per_sec": round(count / elapsed, 4),
        "rebalance_time_ms": int((joined - start) * 1000),
        "fetch_time_ms": int(fetching * 1000), "fetch_mb_per_sec": round(size / MB / fetching, 4),
        "fetch_records_per_sec": round(count / fetching, 4),
    }
    if as_json:
        print_json(summary)
    else:
        print("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
              "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
        print(", ".join(str(summary[k]) for k in (
            "start_time_ms", "end_time_ms", "data_consumed_mb", "mb_per_sec", "records", "records_per_sec",
            "rebalance_time_ms", "fetch_time_ms", "fetch_mb_per_sec", "fetch_records_per_sec")))
    if count < messages:
        typer.echo(f"kraftlog: error: read {count} of {messages} records: none came for {timeout_ms} ms", err=True)
        raise typer.Exit(1)
