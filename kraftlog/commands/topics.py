"""`kraftlog topics create|describe|delete`, like Kafka's kafka-topics.sh, through any broker."""
from __future__ import annotations

import json
from typing import Annotated, Optional

import typer
from rich.table import Table

from client.cluster import Cluster, bootstrap_from
from client.topics import create_topic, delete_topic, describe_topics
from partition_log.errors import InvalidConfigError

from .quorum import output_console

topics_app = typer.Typer(help="Create, describe and delete topics.", no_args_is_help=True)

BootstrapOption = Annotated[Optional[str], typer.Option(
    "--bootstrap", metavar="HOST:PORT[,HOST:PORT...]", help="Brokers to ask (default: $KRAFTLOG_BOOTSTRAP).",
    show_default=False)]


def register(app: typer.Typer) -> None:
    app.add_typer(topics_app, name="topics")


def parse_configs(items: list[str]) -> dict[str, str]:
    configs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidConfigError(f"--config {item!r}: expected KEY=VALUE")
        configs[key] = value
    return configs


@topics_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="Topic name.")],
    partitions: Annotated[int, typer.Option("--partitions", help="Partition count (-1: num.partitions).")] = -1,
    replication_factor: Annotated[int, typer.Option(
        "--replication-factor", help="Replicas per partition (-1: default.replication.factor).")] = -1,
    config: Annotated[list[str], typer.Option("--config", metavar="KEY=VALUE", help="A topic setting.")] = [],
    bootstrap: BootstrapOption = None,
) -> None:
    """Create a topic."""
    with Cluster(bootstrap_from(bootstrap)) as cluster:
        created = create_topic(cluster, name, partitions, replication_factor, parse_configs(config))
    print(f"Created topic {created['name']} ({created['partitions']} partitions, "
          f"replication factor {created['replication_factor']}).")


@topics_app.command("delete")
def delete(name: Annotated[str, typer.Argument(help="Topic name.")], bootstrap: BootstrapOption = None) -> None:
    """Delete a topic."""
    with Cluster(bootstrap_from(bootstrap)) as cluster:
        delete_topic(cluster, name)
    print(f"Deleted topic {name}.")


@topics_app.command("describe")
def describe(
    name: Annotated[Optional[str], typer.Argument(help="Topic name (default: every topic).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array of topics.")] = False,
    bootstrap: BootstrapOption = None,
) -> None:
    """Each partition's leader, leader epoch, replicas and in-sync replicas."""
    with Cluster(bootstrap_from(bootstrap)) as cluster:
        topics = describe_topics(cluster, [name] if name else None)
    if as_json:
        print(json.dumps(topics))
        return
    table = Table("Topic", "Partition", "Leader", "LeaderEpoch", "Replicas", "Isr")
    for topic in topics:
        for p in topic["partitions"]:
            table.add_row(topic["name"], str(p["partition"]), "none" if p["leader"] < 0 else str(p["leader"]),
                          str(p["leader_epoch"]), ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])))
    output_console().print(table)
