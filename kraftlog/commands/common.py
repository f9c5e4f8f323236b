"""What the command groups share: the --bootstrap, --command-config and --json
options, a console for tables, and Kafka's `k=v,k=[v1,v2]` config lists."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from client.cluster import BOOTSTRAP_ENV, Cluster, bootstrap_from
from kafka_protocol.errors import InvalidConfigError
from kafka_protocol.properties_text import read_properties
from security.client_security import CLIENT_SECURITY_KEYS, ClientSecurity

BootstrapOption = Annotated[Optional[str], typer.Option(
    "--bootstrap", metavar="HOST:PORT[,HOST:PORT...]", help="Brokers to ask (default: $KRAFTLOG_BOOTSTRAP).",
    show_default=False)]
CommandConfigOption = Annotated[Optional[Path], typer.Option(
    "--command-config", metavar="FILE", show_default=False,
    help="Client settings in a Java properties file, with Kafka's names: security.protocol, ssl.*, sasl.*.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
BOOTSTRAP_SERVERS = "bootstrap.servers"
# The node file `kraftlog server` and `kraftlog health` read without --config
# (the container image sets it: deploy/Dockerfile).
NODE_CONFIG_ENV = "KRAFTLOG_NODE_CONFIG"


def read_client_file(path: Optional[Path], option: str) -> dict[str, str]:
    """The settings of a client properties file (--command-config, --producer.config, ...); {} without one.
    Errors name the file and a line number, never a value: the file holds passwords."""
    if path is None:
        return {}
    return read_properties(path, f"{option} {path}")


@dataclass(frozen=True)
class ClusterTarget:
    """Where an admin command connects and how: --bootstrap and --command-config."""

    bootstrap: Optional[str] = None
    command_config: Optional[Path] = None

    def settings(self) -> dict[str, str]:
        return read_client_file(self.command_config, "--command-config")

    def given_servers(self, settings: dict[str, str]) -> Optional[str]:
        """--bootstrap, else $KRAFTLOG_BOOTSTRAP, else the file's bootstrap.servers; None without any."""
        return self.bootstrap or os.environ.get(BOOTSTRAP_ENV) or settings.get(BOOTSTRAP_SERVERS)

    def servers(self, settings: dict[str, str]) -> str:
        return bootstrap_from(self.given_servers(settings))

    def security(self, settings: dict[str, str]) -> ClientSecurity:
        """The file's security.protocol, ssl.* and sasl.*; a key an admin call has no use for is
        named in a warning (Kafka's tools warn and go on likewise)."""
        for key in sorted(set(settings) - CLIENT_SECURITY_KEYS - {BOOTSTRAP_SERVERS}):
            typer.echo(f"kraftlog: warning: --command-config {self.command_config}: {key} is not used by this "
                       "command", err=True)
        return ClientSecurity.from_config(settings)

    def resolve(self) -> tuple[str, ClientSecurity]:
        """(bootstrap servers, security settings), the file read once."""
        settings = self.settings()
        return self.servers(settings), self.security(settings)

    def connect(self) -> Cluster:
        """The cluster with the file's security settings (use with `with`)."""
        return Cluster(*self.resolve())


def connect(bootstrap: Optional[str], command_config: Optional[Path] = None) -> Cluster:
    """The cluster through --bootstrap (else $KRAFTLOG_BOOTSTRAP) as --command-config says (use with `with`)."""
    return ClusterTarget(bootstrap, command_config).connect()


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
