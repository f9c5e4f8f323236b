"""`kraftlog leader-election`, like Kafka's kafka-leader-election.sh: move leadership
back to preferred replicas, or (unclean) let an out-of-sync replica lead an offline
partition - availability over durability: records only the old ISR had are lost."""
from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kafka_protocol.errors import Errors
from client.admin import ELECTION_TYPES, elect_leaders
from client.cluster import Cluster
from client.errors import error_for_code
from client.metadata_cache import PartitionInfo

from .common import BootstrapOption, CommandConfigOption, JsonOption, connect, print_json

ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"


def register(app: typer.Typer) -> None:
    app.command("leader-election")(leader_election)


def leader_election(
    election_type: Annotated[str, typer.Option(
        "--election-type", metavar="preferred|unclean", help="preferred: the first live ISR replica; "
        "unclean: any live replica of an offline partition.", show_default=False)],
    topic: Annotated[Optional[str], typer.Option("--topic", help="The topic (with --partition: one partition).",
                                                 show_default=False)] = None,
    partition: Annotated[Optional[int], typer.Option("--partition", help="The partition of --topic.",
                                                     show_default=False)] = None,
    all_topic_partitions: Annotated[bool, typer.Option(
        "--all-topic-partitions", help="Every partition of every topic.")] = False,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Elect leaders; exits 1 if any partition could not get the leader it asked for."""
    kind = election_type.lower()
    if kind not in ELECTION_TYPES:
        raise typer.BadParameter("expected preferred or unclean", param_hint="--election-type")
    if all_topic_partitions == (topic is not None):
        raise typer.BadParameter("give either --all-topic-partitions or --topic [--partition]")
    if partition is not None and topic is None:
        raise typer.BadParameter("--partition needs --topic")
    with connect(bootstrap, command_config) as cluster:
        wanted = None
        if topic is not None:
            ids = [partition] if partition is not None else [p.partition for p in _partitions_of(cluster, topic)]
            wanted = {topic: ids}
        outcomes = elect_leaders(cluster, kind, wanted)
    if as_json:
        print_json(outcomes)
    else:
        _print_outcomes(kind.upper(), outcomes)
    failed = [o for o in outcomes if o["error"] not in (None, ELECTION_NOT_NEEDED)]
    if failed:
        typer.echo(f"kraftlog: error: {len(failed)} of {len(outcomes)} partitions could not be elected "
                   f"({', '.join(sorted({o['error'] for o in failed}))})", err=True)
        raise typer.Exit(1)


def _partitions_of(cluster: Cluster, topic: str) -> list[PartitionInfo]:
    partitions = cluster.partitions(topic)
    if not partitions:
        raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}: no such topic")
    return partitions


def _print_outcomes(kind: str, outcomes: list[dict[str, Any]]) -> None:
    def names(items: list[dict[str, Any]]) -> str:
        return ", ".join(f"{o['topic']}-{o['partition']}" for o in items)

    done = [o for o in outcomes if o["error"] is None]
    not_needed = [o for o in outcomes if o["error"] == ELECTION_NOT_NEEDED]
    if done:
        print(f"Successfully completed leader election ({kind}) for partitions {names(done)}")
    if not_needed:
        print(f"Valid replica already elected for partitions {names(not_needed)}")
    for o in outcomes:
        if o["error"] not in (None, ELECTION_NOT_NEEDED):
            why = f"{o['error']}: {o['message']}" if o["message"] else o["error"]
            print(f"Error completing leader election ({kind}) for partition {o['topic']}-{o['partition']}: {why}")
    if not outcomes:
        print("No leader election was needed.")
