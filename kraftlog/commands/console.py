"""`kraftlog produce` and `kraftlog consume`: Kafka's console producer and consumer."""
from __future__ import annotations

import base64
import json
import sys
from typing import Annotated, Iterator, Optional

import typer

from client.cluster import Cluster, bootstrap_from
from client.console import ConsumedRecord, consume, produce_values

from .common import BootstrapOption


def register(app: typer.Typer) -> None:
    app.command("produce")(produce)
    app.command("consume")(consume_command)


def _lines() -> Iterator[bytes]:
    for line in sys.stdin.buffer:
        yield line.rstrip(b"\r\n")


def produce(
    topic: Annotated[str, typer.Argument(help="Topic to write to.")],
    acks: Annotated[str, typer.Option("--acks", help="0, 1 or all.")] = "all",
    partition: Annotated[Optional[int], typer.Option("--partition", help="Write every record here.")] = None,
    batch_records: Annotated[int, typer.Option("--batch-records", help="Records per batch.")] = 500,
    bootstrap: BootstrapOption = None,
) -> None:
    """Read lines from stdin, one record per line; exit 1 if any was not acknowledged."""
    acks_value = {"all": -1, "-1": -1, "1": 1, "0": 0}.get(acks)
    if acks_value is None:
        raise typer.BadParameter("expected 0, 1 or all", param_hint="--acks")
    with Cluster(bootstrap_from(bootstrap)) as cluster:
        summary = produce_values(cluster, topic, _lines(), acks=acks_value, batch_records=batch_records,
                                 partition=partition)
    if summary.failed:
        detail = ", ".join(f"{n} {name}" for name, n in summary.errors.items())
        typer.echo(f"kraftlog: error: {summary.failed} of {summary.failed + summary.acknowledged} records "
                   f"were not acknowledged ({detail})", err=True)
        raise typer.Exit(1)


def _text(data: Optional[bytes]) -> Optional[str]:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode()


def _as_json(r: ConsumedRecord) -> str:
    return json.dumps({
        "topic": r.topic, "partition": r.partition, "offset": r.offset, "timestamp": r.timestamp,
        "key": _text(r.key), "value": _text(r.value), "headers": {k: _text(v) for k, v in r.headers},
    })


def consume_command(
    topic: Annotated[str, typer.Argument(help="Topic to read.")],
    from_beginning: Annotated[bool, typer.Option("--from-beginning", help="Start at the earliest offsets.")] = False,
    max_messages: Annotated[Optional[int], typer.Option("--max-messages", help="Stop after this many.")] = None,
    timeout_ms: Annotated[Optional[int], typer.Option(
        "--timeout-ms", help="Stop once no record arrived for this long.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per record per line.")] = False,
    bootstrap: BootstrapOption = None,
) -> None:
    """Print records: their values, or with --json every field."""
    with Cluster(bootstrap_from(bootstrap)) as cluster:
        idle = None if timeout_ms is None else timeout_ms / 1000
        for record in consume(cluster, topic, from_beginning=from_beginning, max_messages=max_messages,
                              idle_timeout_s=idle):
            print(_as_json(record) if as_json else (_text(record.value) or ""), flush=False)
    sys.stdout.flush()
