"""`kraftlog produce` and `kraftlog consume`: Kafka's console producer and consumer,
over the client's Producer and Consumer."""
from __future__ import annotations

import asyncio
import base64
import json
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any, Callable, Iterator, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

from client.consumer import Consumer, ConsumerRecord, TopicPartition
from client.consumer_config import ConsumerConfig
from client.errors import error_for_code
from client.metadata import Metadata
from client.producer import Producer
from client.producer_config import ProducerConfig
from kafka_protocol.errors import Errors, KafkaError
from kafka_protocol.wording import counted
from security.client_security import ClientSecurity

from .common import BootstrapOption, ClusterTarget, parse_config_list, read_client_file
from .stop_signals import Interrupted, StopSignals

EARLIEST, LATEST = "earliest", "latest"
IDLE_POLL_S = 0.5

AcksOption = Annotated[Optional[str], typer.Option("--acks", help="0, 1 or all (default: all).", show_default=False)]
CompressionOption = Annotated[Optional[str], typer.Option(
    "--compression", help="none, gzip, snappy, lz4 or zstd (default: none).", show_default=False)]
ProducerProperty = Annotated[list[str], typer.Option(
    "--producer-property", metavar="K=V", help="Any producer setting, e.g. linger.ms=20.")]
ConsumerProperty = Annotated[list[str], typer.Option(
    "--consumer-property", metavar="K=V", help="Any consumer setting, e.g. fetch.min.bytes=1024.")]
# Kafka's console tools name the file --producer.config / --consumer.config; Kafka 4.1 (KIP-1147) calls
# it --command-config on every tool: both are taken.
ProducerConfigFile = Annotated[Optional[Path], typer.Option(
    "--producer.config", "--command-config", metavar="FILE", show_default=False,
    help="Producer settings in a Java properties file (security.protocol, ssl.*, sasl.*, acks, ...).")]
ConsumerConfigFile = Annotated[Optional[Path], typer.Option(
    "--consumer.config", "--command-config", metavar="FILE", show_default=False,
    help="Consumer settings in a Java properties file (security.protocol, ssl.*, sasl.*, group.id, ...).")]
PRODUCER_CONFIG, CONSUMER_CONFIG = "--producer.config", "--consumer.config"


def register(app: typer.Typer) -> None:
    app.command("produce")(produce)
    app.command("consume")(consume)


# --- shared with `kraftlog perf` ------------------------------------------------------------

def client_settings(bootstrap: Optional[str], config_file: Optional[Path], file_option: str,
                    properties: list[str], property_option: str, **options: Any) -> dict[str, Any]:
    """A producer's or consumer's settings in the order of Kafka's console tools: the file
    (--producer.config), then the command's own options that were given (None: not given), then
    --producer-property. bootstrap.servers: --bootstrap, else $KRAFTLOG_BOOTSTRAP, else the file's."""
    from_file = read_client_file(config_file, file_option)
    settings: dict[str, Any] = {**from_file, "bootstrap.servers": ClusterTarget(bootstrap).servers(from_file)}
    settings.update((key, value) for key, value in options.items() if value is not None)
    settings.update(kv for text in properties for kv in parse_config_list(text, property_option))
    return settings


def producer_settings(bootstrap: Optional[str], config_file: Optional[Path], properties: list[str],
                      **options: Any) -> dict[str, Any]:
    return client_settings(bootstrap, config_file, PRODUCER_CONFIG, properties, "--producer-property", **options)


def consumer_settings(bootstrap: Optional[str], config_file: Optional[Path], properties: list[str],
                      **options: Any) -> dict[str, Any]:
    return client_settings(bootstrap, config_file, CONSUMER_CONFIG, properties, "--consumer-property", **options)


def topic_partitions(servers: str, topic: str, max_block_ms: int, security: Optional[ClientSecurity] = None,
                     **metadata_settings: int) -> list[int]:
    """The topic's partition ids, waiting up to `max_block_ms` for the brokers to know it, as Kafka's
    clients do: a topic just created is in the controller's log before every broker has applied it,
    so UNKNOWN_TOPIC_OR_PARTITION is retried (with backoff) until then, and only then is an error
    ("Topic T not present in metadata after N ms.")."""
    async def wait() -> list[int]:
        metadata = Metadata(servers, security=security, **metadata_settings)
        try:
            return [p.partition for p in await metadata.partitions_for(topic, max_block_ms)]
        finally:
            await metadata.close()
    return asyncio.run(wait())


def producer_topic_partitions(settings: dict[str, Any], topic: str) -> list[int]:
    """As Kafka's producer.partitionsFor: waits up to max.block.ms."""
    config = ProducerConfig.parse(settings)
    return topic_partitions(settings["bootstrap.servers"], topic, config.max_block_ms, config.security,
                            retry_backoff_ms=config.retry_backoff_ms, retry_backoff_max_ms=config.retry_backoff_max_ms)


def consumer_topic_partitions(settings: dict[str, Any], topic: str) -> list[int]:
    """As Kafka's consumer.partitionsFor: waits up to default.api.timeout.ms (a consumer has no
    max.block.ms)."""
    config = ConsumerConfig.parse(settings)
    return topic_partitions(settings["bootstrap.servers"], topic, config.default_api_timeout_ms, config.security,
                            retry_backoff_ms=config.retry_backoff_ms)


class DeliveryTally:
    """Acknowledged and failed records by error name, counted from delivery callbacks
    (they run on the producer's I/O thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acknowledged = 0
        self.errors: dict[str, int] = {}

    def __call__(self, error: Optional[KafkaError], metadata: Any) -> None:
        with self.lock:
            if error is None:
                self.acknowledged += 1
            else:
                name = getattr(error, "name", type(error).__name__)
                self.errors[name] = self.errors.get(name, 0) + 1

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def problem(self) -> Optional[str]:
        if not self.failed:
            return None
        detail = ", ".join(f"{n} {name}" for name, n in sorted(self.errors.items()))
        return f"{self.failed} of {self.failed + self.acknowledged} records were not acknowledged ({detail})"


# --- produce ---------------------------------------------------------------------------------

def produce(
    topic: Annotated[str, typer.Argument(help="Topic to write to.")],
    file: Annotated[Optional[Path], typer.Option(
        "--file", help="Read lines from this file (with a progress bar) instead of stdin.", show_default=False)] = None,
    key_separator: Annotated[Optional[str], typer.Option(
        "--key-separator", help="Each line is KEY<sep>VALUE (Kafka's parse.key with key.separator).",
        show_default=False)] = None,
    acks: AcksOption = None,
    compression: CompressionOption = None,
    partition: Annotated[Optional[int], typer.Option("--partition", help="Write every record here.")] = None,
    batch_records: Annotated[Optional[int], typer.Option(
        "--batch-records", help="Keyless records go round the partitions in runs of this many "
        "(default: Kafka's sticky partitioner).", show_default=False)] = None,
    producer_property: ProducerProperty = [],
    producer_config: ProducerConfigFile = None,
    bootstrap: BootstrapOption = None,
) -> None:
    """Write one record per line; exit 1 if any was not acknowledged."""
    if batch_records is not None and batch_records < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--batch-records")
    if key_separator == "":
        raise typer.BadParameter("must not be empty", param_hint="--key-separator")
    settings = producer_settings(bootstrap, producer_config, producer_property,
                                 **{"acks": acks, "compression.type": compression})
    partitions = producer_topic_partitions(settings, topic)
    if partition is not None and partition not in partitions:
        raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}: no partition {partition}")
    tally = DeliveryTally()
    sent, bad_line = 0, None
    with StopSignals() as stop, Producer(settings) as producer, _input(file) as (lines, advance):
        try:
            for number, line in enumerate(stop.until_stopped(lines), start=1):
                key, value = _split(line, key_separator)
                if value is None:
                    bad_line = number
                    break
                target = partition
                if target is None and batch_records is not None and key is None:
                    target = partitions[(sent // batch_records) % len(partitions)]
                producer.produce(topic, value, key=key, partition=target, on_delivery=tally)
                sent += 1
                advance(len(line) + 1)
        finally:
            _deliver(producer, stop)
    problems = [tally.problem()]
    if bad_line is not None:
        problems.append(f"line {bad_line} has no key separator {key_separator!r}: "
                        f"it and the lines after it were not sent")
    if stop.signal_name is not None:
        # Stopped by a signal: say how far it got, so no record is lost unknowingly.
        typer.echo(f"{stop.signal_name}: stopped; {tally.acknowledged} of {sent} records sent were acknowledged, "
                   f"{sent - tally.acknowledged} were not", err=True)
    if any(problems):
        typer.echo(f"kraftlog: error: {'; '.join(p for p in problems if p)}", err=True)
        raise typer.Exit(1)


def _deliver(producer: Producer, stop: StopSignals) -> None:
    """Wait for every record sent to be acknowledged or to fail (delivery.timeout.ms bounds each).
    A stop signal during the wait gives up: what is undelivered then fails and is counted."""
    try:
        with stop.interruptible():
            producer.flush()
    except Interrupted:
        producer.close(timeout=0)


def _split(line: bytes, separator: Optional[str]) -> tuple[Optional[bytes], Optional[bytes]]:
    """(key, value) of a line; value None when the line lacks the separator."""
    if separator is None:
        return None, line
    key, found, value = line.partition(separator.encode())
    return (key, value) if found else (None, None)


@contextmanager
def _input(file: Optional[Path]) -> Iterator[tuple[Iterator[bytes], Any]]:
    """(lines without their end of line, advance(bytes read)) from the file with a progress bar
    on a terminal, or from stdin."""
    if file is None:
        yield _lines(sys.stdin.buffer), lambda n: None
        return
    size = file.stat().st_size
    console = Console(stderr=True)
    progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                        TransferSpeedColumn(), TimeRemainingColumn(), console=console,
                        disable=not console.is_terminal)
    with file.open("rb") as f, progress:
        task = progress.add_task(f"producing {file.name}", total=size)
        yield _lines(f), lambda n: progress.advance(task, n)


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    for line in stream:
        yield line.rstrip(b"\r\n")


# --- consume ---------------------------------------------------------------------------------

def consume(
    topic: Annotated[str, typer.Argument(help="Topic to read.")],
    from_beginning: Annotated[bool, typer.Option(
        "--from-beginning", help="Start at the earliest offsets (with --group: where nothing is committed).")] = False,
    group: Annotated[Optional[str], typer.Option(
        "--group", help="Read as a member of this consumer group, committing offsets.", show_default=False)] = None,
    partition: Annotated[Optional[int], typer.Option("--partition", help="Only this partition.",
                                                     show_default=False)] = None,
    offset: Annotated[Optional[str], typer.Option(
        "--offset", help="With --partition: an offset, earliest or latest.", show_default=False)] = None,
    max_messages: Annotated[Optional[int], typer.Option("--max-messages", help="Stop after this many.",
                                                        show_default=False)] = None,
    timeout_ms: Annotated[Optional[int], typer.Option(
        "--timeout-ms", help="Stop once no record arrived for this long.", show_default=False)] = None,
    print_key: Annotated[bool, typer.Option("--print-key", help="Print each record's key before its value.")] = False,
    print_headers: Annotated[bool, typer.Option("--print-headers", help="Print each record's headers first.")] = False,
    key_separator: Annotated[str, typer.Option("--key-separator", help="Between headers, key and value.")] = "\t",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per record per line.")] = False,
    consumer_property: ConsumerProperty = [],
    consumer_config: ConsumerConfigFile = None,
    bootstrap: BootstrapOption = None,
) -> None:
    """Print records: their values (optionally headers and keys), or with --json every field."""
    if offset is not None and partition is None:
        raise typer.BadParameter("--offset needs --partition", param_hint="--offset")
    if group is not None and (partition is not None):
        raise typer.BadParameter("a group member is given its partitions: drop --partition or --group")
    start = _start_offset(offset)
    options: dict[str, Any] = {"auto.offset.reset": EARLIEST if from_beginning else None}
    if group is not None:
        # Commit what was printed, not what poll() fetched beyond --max-messages.
        options.update({"group.id": group, "enable.auto.commit": False})
    settings = consumer_settings(bootstrap, consumer_config, consumer_property, **options)
    settings.setdefault("auto.offset.reset", LATEST)  # without --from-beginning, unless the file says
    partitions = consumer_topic_partitions(settings, topic)
    if partition is not None and partition not in partitions:
        raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}: no partition {partition}")

    def shown(record: ConsumerRecord) -> str:
        return _as_json(record) if as_json else _as_text(record, print_key, print_headers, key_separator)

    with StopSignals() as stop:
        delivered = _consume(Consumer(settings), stop, topic, group, partitions, partition, start, max_messages,
                             timeout_ms, shown)
    typer.echo(f"Processed a total of {delivered} messages", err=True)


def _consume(consumer: Consumer, stop: StopSignals, topic: str, group: Optional[str], partitions: list[int],
             partition: Optional[int], start: Optional[int | str], max_messages: Optional[int],
             timeout_ms: Optional[int], shown: Callable[[ConsumerRecord], str]) -> int:
    """Print records until --max-messages, --timeout-ms or a stop signal; then commit what was printed
    (as a group member) and close, which leaves the group. Returns how many were printed."""
    delivered = 0
    printed: dict[TopicPartition, int] = {}
    try:
        if group is not None:
            consumer.subscribe([topic], on_revoke=lambda c, tps: _let_go(c, printed, tps, commit=True),
                               on_lost=lambda c, tps: _let_go(c, printed, tps, commit=False))
        else:
            wanted = [TopicPartition(topic, p) for p in partitions if partition is None or p == partition]
            consumer.assign(wanted)
            if isinstance(start, int):
                consumer.seek(wanted[0], start)
            elif start == EARLIEST:
                consumer.seek_to_beginning(wanted)
            elif start == LATEST:
                consumer.seek_to_end(wanted)
        for record in _records(consumer, stop, max_messages, None if timeout_ms is None else timeout_ms / 1000):
            print(shown(record))
            delivered += 1
            printed[record.topic_partition] = record.offset + 1
    finally:
        sys.stdout.flush()
        try:
            if group is not None and printed and not consumer.config.enable_auto_commit:
                consumer.commit(printed)
        finally:
            consumer.close()
    return delivered


def _let_go(consumer: Consumer, printed: dict[TopicPartition, int], partitions: list[TopicPartition], *,
            commit: bool) -> None:
    """Partitions leaving this group member. Revoked ones (moving to another
    member) get what was printed of them committed first, as Kafka's
    onPartitionsRevoked does, or the next owner prints it again; lost ones
    (this member was fenced) cannot be committed any more. Either way they
    are forgotten here, so that no later commit of this member takes their
    offsets back behind what their next owner committed."""
    offsets = {tp: printed.pop(tp) for tp in partitions if tp in printed}
    if commit and offsets:
        try:
            consumer.commit(offsets)
        except KafkaError as exc:  # as an auto-commit's failure: reported, the consumer goes on
            typer.echo(f"kraftlog: warning: commit of {counted(len(offsets), 'revoked partition')} failed: {exc}",
                       err=True)


def _start_offset(text: Optional[str]) -> Optional[int | str]:
    if text is None or text in (EARLIEST, LATEST):
        return text
    if text.isdigit():
        return int(text)
    raise typer.BadParameter("expected an offset (0 or more), earliest or latest", param_hint="--offset")


def _records(consumer: Consumer, stop: StopSignals, max_messages: Optional[int],
             idle_s: Optional[float]) -> Iterator[ConsumerRecord]:
    """Polled records until max_messages, idle_s without any, or a stop signal (checked before each
    record: one printed is one noted for the commit)."""
    delivered = 0
    last = time.monotonic()
    while (max_messages is None or delivered < max_messages) and not stop.stopping:
        # What was printed reaches a pipe (`kraftlog consume ... | grep`) before waiting for more,
        # not when an 8 KB buffer fills: Kafka's console consumer is read line by line likewise.
        sys.stdout.flush()
        records = consumer.poll(IDLE_POLL_S)
        if records:
            last = time.monotonic()
        elif idle_s is not None and time.monotonic() - last >= idle_s:
            return
        for record in records[: None if max_messages is None else max_messages - delivered]:
            if stop.stopping:
                return
            yield record
            delivered += 1


def text_or_base64(data: Optional[bytes]) -> Optional[str]:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode()


def _as_json(r: ConsumerRecord) -> str:
    return json.dumps({
        "topic": r.topic, "partition": r.partition, "offset": r.offset, "timestamp": r.timestamp,
        "key": text_or_base64(r.key), "value": text_or_base64(r.value),
        "headers": {k: text_or_base64(v) for k, v in r.headers},
    })


def _as_text(r: ConsumerRecord, print_key: bool, print_headers: bool, separator: str) -> str:
    fields = []
    if print_headers:
        fields.append(",".join(f"{k}:{_shown(v)}" for k, v in r.headers) or "NO_HEADERS")
    if print_key:
        fields.append(_shown(r.key))
    fields.append(_shown(r.value))
    return separator.join(fields)


def _shown(data: Optional[bytes]) -> str:
    text = text_or_base64(data)
    return "null" if text is None else text

