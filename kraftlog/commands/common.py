"""What the command groups share: the --bootstrap and --json options, a console
for tables, and Kafka's `k=v,k=[v1,v2]` config lists."""
from __future__ import annotations

import json
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from client.cluster import Cluster, bootstrap_from
from kafka_protocol.errors import InvalidConfigError

BootstrapOption = Annotated[Optional[str], typer.Option(
    "--bootstrap", metavar="HOST:PORT[,HOST:PORT...]", help="Brokers to ask (default: $KRAFTLOG_BOOTSTRAP).",
    show_default=False)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]


def connect(bootstrap: Optional[str]) -> Cluster:
    """The cluster through --bootstrap, else $KRAFTLOG_BOOTSTRAP (use with `with`)."""
    return Cluster(bootstrap_from(bootstrap))


def print_json(value: Any) -> None:
    print(json.dumps(value))


def output_console() -> Console:
    """A console for tables; into a pipe or file, wide enough that no column is cut."""
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 160)
    return console


def parse_config_list(text: str, option: str) -> list[tuple[str, str]]:
    """Kafka's kafka-configs syntax: `k1=v1,k2=[v1,v2],k3=v3` (brackets keep a list's commas together)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise InvalidConfigError(f"{option} {text!r}: unbalanced [ ]")
    pairs = []
    for item in items:
        key, sep, value = item.strip().partition("=")
        if not sep or not key.strip():
            raise InvalidConfigError(f"{option} {item.strip()!r}: expected KEY=VALUE")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        pairs.append((key.strip(), value))
    return pairs


def parse_names(texts: list[str]) -> list[str]:
    """`--delete-config k1,k2 --delete-config k3` -> [k1, k2, k3]."""
    return [name.strip() for text in texts for name in text.split(",") if name.strip()]
