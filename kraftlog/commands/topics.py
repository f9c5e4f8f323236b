"""`kraftlog topics list|create|describe|delete|alter-config|add-partitions`, like
Kafka's kafka-topics.sh (and kafka-configs.sh for a topic's settings), through any broker."""
from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from client.admin import TOPIC, describe_configs
from client.cluster import Cluster
from client.errors import error_for_code
from client.topics import add_partitions, create_topic, delete_topic, describe_topics, list_topics
from kafka_protocol.internal_topics import INTERNAL_TOPICS, is_client_forbidden
from kafka_protocol.errors import Errors, InvalidConfigError

from .common import BootstrapOption, ClusterTarget, CommandConfigOption, JsonOption, connect, output_console, print_json
from .configs import AddConfig, AppendConfig, DeleteConfig, SubtractConfig, alter_entity

topics_app = typer.Typer(help="List, create, describe, change and delete topics.", no_args_is_help=True)
TopicArgument = Annotated[str, typer.Argument(help="Topic name.", show_default=False)]


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


@topics_app.command("list")
def list_command(as_json: JsonOption = False, bootstrap: BootstrapOption = None,
                 command_config: CommandConfigOption = None) -> None:
    """Every topic's name, one per line."""
    with connect(bootstrap, command_config) as cluster:
        names = list_topics(cluster)
    if as_json:
        print_json(names)
    else:
        for name in names:
            print(name)


@topics_app.command("create")
def create(
    name: TopicArgument,
    partitions: Annotated[int, typer.Option("--partitions", help="Partition count (-1: num.partitions).")] = -1,
    replication_factor: Annotated[int, typer.Option(
        "--replication-factor", help="Replicas per partition (-1: default.replication.factor).")] = -1,
    config: Annotated[list[str], typer.Option("--config", metavar="KEY=VALUE", help="A topic setting.")] = [],
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Create a topic."""
    with connect(bootstrap, command_config) as cluster:
        created = create_topic(cluster, name, partitions, replication_factor, parse_configs(config))
    print(f"Created topic {created['name']} ({created['partitions']} partitions, "
          f"replication factor {created['replication_factor']}).")


@topics_app.command("delete")
def delete(name: TopicArgument, bootstrap: BootstrapOption = None,
                 command_config: CommandConfigOption = None) -> None:
    """Delete a topic and its data."""
    if is_client_forbidden(name):  # as kafka-topics.sh refuses before asking; the controller refuses too
        raise error_for_code(Errors.INVALID_TOPIC_EXCEPTION,
                             f"Topic {name} is a kafka internal topic and is not allowed to be marked for deletion.")
    with connect(bootstrap, command_config) as cluster:
        delete_topic(cluster, name)
    print(f"Deleted topic {name}.")


@topics_app.command("add-partitions")
def add_partitions_command(
    name: TopicArgument,
    partitions: Annotated[int, typer.Option("--partitions", help="The new partition count (it only grows).",
                                            show_default=False)],
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Grow a topic to --partitions partitions. Keys that hashed to one partition may then go to another."""
    if is_client_forbidden(name):  # as kafka-topics.sh refuses before asking; the controller refuses too
        raise error_for_code(Errors.INVALID_TOPIC_EXCEPTION, "The number of partitions for the internal topics "
                             f"{' and '.join(sorted(INTERNAL_TOPICS))} cannot be changed.")
    with connect(bootstrap, command_config) as cluster:
        add_partitions(cluster, name, partitions)
    print(f"Topic {name} now has {partitions} partitions.")


@topics_app.command("alter-config")
def alter_config(
    name: TopicArgument,
    add_config: AddConfig = [],
    delete_config: DeleteConfig = [],
    append_config: AppendConfig = [],
    subtract_config: SubtractConfig = [],
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Change a topic's settings, like kafka-configs --alter --topic: all of them or none."""
    alter_entity(TOPIC, name, f"topic {name}", add_config, delete_config, append_config, subtract_config,
                 ClusterTarget(bootstrap, command_config))


@topics_app.command("describe")
def describe(
    name: Annotated[Optional[str], typer.Argument(help="Topic name (default: every topic).")] = None,
    under_replicated: Annotated[bool, typer.Option(
        "--under-replicated-partitions", help="Only partitions whose ISR is smaller than their replicas.")] = False,
    unavailable: Annotated[bool, typer.Option(
        "--unavailable-partitions", help="Only partitions without a live leader.")] = False,
    under_min_isr: Annotated[bool, typer.Option(
        "--under-min-isr-partitions", help="Only partitions whose ISR is smaller than min.insync.replicas.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array of topics.")] = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Each partition's leader, epoch, replicas, ISR, ELR and last known ELR (KIP-966), marked when
    offline or under-replicated."""
    with connect(bootstrap, command_config) as cluster:
        topics = describe_topics(cluster, [name] if name else None)
        _add_configs(cluster, topics)
    filters = [f for f, on in ((_is_under_replicated, under_replicated), (_is_unavailable, unavailable),
                               (_is_under_min_isr, under_min_isr)) if on]
    if filters:
        for topic in topics:
            topic["partitions"] = [p for p in topic["partitions"] if any(f(topic, p) for f in filters)]
        topics = [t for t in topics if t["partitions"]]
    if as_json:
        print_json(topics)
        return
    console = output_console()
    for topic in topics:
        if not filters:
            overrides = ",".join(f"{k}={v}" for k, v in topic["configs"].items())
            console.print(f"Topic: {topic['name']}\tTopicId: {topic['topic_id']}\t"
                          f"PartitionCount: {len(topic['partitions'])}\t"
                          f"ReplicationFactor: {_replication_factor(topic)}\tConfigs: {overrides}",
                          markup=False, highlight=False)
        table = Table("Topic", "Partition", "Leader", "LeaderEpoch", "Replicas", "Isr", "Elr", "LastKnownElr",
                      "Status", box=box.SIMPLE_HEAD)
        for p in topic["partitions"]:
            table.add_row(topic["name"], str(p["partition"]), "none" if p["leader"] < 0 else str(p["leader"]),
                          str(p["leader_epoch"]), ",".join(map(str, p["replicas"])),
                          ",".join(map(str, p["isr"])), ",".join(map(str, p["eligible_leader_replicas"])),
                          ",".join(map(str, p["last_known_elr"])), _status(topic, p))
        console.print(table)


def _add_configs(cluster: Cluster, topics: list[dict[str, Any]]) -> None:
    """Each topic's dynamic settings ("configs") and its effective min.insync.replicas."""
    if not topics:
        return
    described = describe_configs(cluster, TOPIC, [t["name"] for t in topics])
    for topic in topics:
        settings = described.get(topic["name"], [])
        topic["configs"] = {s["name"]: s["value"] for s in settings if s["source"] == "DYNAMIC_TOPIC_CONFIG"}
        topic["min_insync_replicas"] = next(
            (int(s["value"]) for s in settings if s["name"] == "min.insync.replicas"), 1)


def _is_under_replicated(topic: dict[str, Any], p: dict[str, Any]) -> bool:
    return bool(p["under_replicated"])


def _is_unavailable(topic: dict[str, Any], p: dict[str, Any]) -> bool:
    return bool(p["offline"])


def _is_under_min_isr(topic: dict[str, Any], p: dict[str, Any]) -> bool:
    return len(p["isr"]) < topic["min_insync_replicas"]


def _status(topic: dict[str, Any], p: dict[str, Any]) -> str:
    marks = [word for word, test in (("offline", _is_unavailable), ("under-replicated", _is_under_replicated),
                                     ("under-min-isr", _is_under_min_isr)) if test(topic, p)]
    return ",".join(marks)


def _replication_factor(topic: dict[str, Any]) -> int:
    return len(topic["partitions"][0]["replicas"]) if topic["partitions"] else 0
