"""`kraftlog reassign-partitions`, like Kafka's kafka-reassign-partitions.sh: propose
a placement of topics over a set of brokers (--generate), start moving
partitions (--execute, optionally throttled), follow them (--verify, which
removes the throttles once every move is done), cancel them (--cancel), and
list what is under way (--list). The JSON files are Kafka's
(client/reassignment_json.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Mapping, Optional, Sequence

import typer

from client.admin import describe_cluster
from client.cluster import Cluster
from client.errors import KafkaError, error_for_code
from client.reassignment_json import parse_reassignment, parse_topics_to_move, reassignment_json
from client.reassignment_throttles import apply_throttles, clear_throttles
from client.reassignments import alter_partition_reassignments, list_partition_reassignments
from client.topics import describe_topics
from kafka_protocol.errors import Errors
from metadata_quorum.controller.assignment import PlacementBroker, place_replicas
from metadata_quorum.controller.errors import ControllerError

from .common import BootstrapOption, CommandConfigOption, JsonOption, connect, print_json

TopicPartition = tuple[str, int]
NO_THROTTLE = -1

ReassignmentFile = Annotated[Optional[Path], typer.Option(
    "--reassignment-json-file", metavar="FILE", show_default=False,
    help='The moves: {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}.')]


def register(app: typer.Typer) -> None:
    app.command("reassign-partitions")(reassign_partitions)


def reassign_partitions(
    generate: Annotated[bool, typer.Option("--generate", help="Propose an assignment of --topics-to-move-json-file "
                                           "over --broker-list; changes nothing.")] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Start the moves of --reassignment-json-file.")] = False,
    verify: Annotated[bool, typer.Option("--verify", help="Tell whether the moves of --reassignment-json-file are "
                                         "done; once all are, remove the throttles.")] = False,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel the moves of --reassignment-json-file "
                                         "still under way; their partitions keep their replicas.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the moves under way.")] = False,
    topics_to_move_json_file: Annotated[Optional[Path], typer.Option(
        "--topics-to-move-json-file", metavar="FILE", show_default=False,
        help='With --generate: {"version":1,"topics":[{"topic":..}]}.')] = None,
    broker_list: Annotated[Optional[str], typer.Option(
        "--broker-list", metavar="ID,ID,...", show_default=False, help="With --generate: the brokers to use.")] = None,
    disable_rack_aware: Annotated[bool, typer.Option(
        "--disable-rack-aware", help="With --generate: ignore the brokers' racks.")] = False,
    reassignment_json_file: ReassignmentFile = None,
    throttle: Annotated[int, typer.Option(
        "--throttle", metavar="BYTES/S", help="With --execute: cap the moves' replication at this rate per "
        "broker (-1: no throttle).")] = NO_THROTTLE,
    additional: Annotated[bool, typer.Option(
        "--additional", help="With --execute: start these moves while others are under way.")] = False,
    preserve_throttles: Annotated[bool, typer.Option(
        "--preserve-throttles", help="With --verify or --cancel: leave the throttles in place.")] = False,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Move partitions between brokers; exits 1 if a move could not be started or cancelled."""
    actions = [name for name, given in (("--generate", generate), ("--execute", execute), ("--verify", verify),
                                        ("--cancel", cancel), ("--list", list_)) if given]
    if len(actions) != 1:
        raise typer.BadParameter("give exactly one of --generate, --execute, --verify, --cancel, --list")
    if throttle != NO_THROTTLE and (not execute or throttle < 0):
        raise typer.BadParameter("a rate of 0 or more bytes per second, with --execute", param_hint="--throttle")
    # The files are read and checked before the cluster is asked anything.
    if generate:
        if topics_to_move_json_file is None or broker_list is None:
            raise typer.BadParameter("--generate needs --topics-to-move-json-file and --broker-list")
        topics = _read(topics_to_move_json_file, parse_topics_to_move, "--topics-to-move-json-file")
        broker_ids = _broker_ids(broker_list)
    elif not list_:
        if reassignment_json_file is None:
            raise typer.BadParameter(f"{actions[0]} needs --reassignment-json-file")
        targets = _read(reassignment_json_file, parse_reassignment, "--reassignment-json-file")
    with connect(bootstrap, command_config) as cluster:
        if generate:
            _generate(cluster, topics, broker_ids, disable_rack_aware)
        elif list_:
            _list(cluster, as_json)
        else:
            if execute:
                _execute(cluster, targets, throttle, additional)
            elif verify:
                _verify(cluster, targets, preserve_throttles, as_json)
            else:
                _cancel(cluster, targets, preserve_throttles)


def _read(path: Path, parse: Any, option: str) -> Any:
    try:
        return parse(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise typer.BadParameter(f"{path}: {exc}", param_hint=option) from None


def _broker_ids(text: str) -> list[int]:
    try:
        ids = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected broker ids, e.g. 1,2,3", param_hint="--broker-list") from None
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        raise typer.BadParameter(f"{text!r}: distinct broker ids, at least one", param_hint="--broker-list")
    return ids


def current_assignment(cluster: Cluster, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
    """(topic, partition) -> replicas now, for every partition of `topics` (UNKNOWN_TOPIC_OR_PARTITION raises)."""
    return {(t["name"], p["partition"]): p["replicas"]
            for t in describe_topics(cluster, sorted(set(topics))) for p in t["partitions"]}


def propose(current: Mapping[TopicPartition, Sequence[int]], brokers: Sequence[PlacementBroker]
            ) -> dict[TopicPartition, tuple[int, ...]]:
    """Each topic placed afresh over `brokers` with its replication factor, by the controller's
    rack-aware placement; each topic starts one broker further round, as new topics do."""
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    topics = sorted({topic for topic, _ in current})
    for index, topic in enumerate(topics):
        partitions = sorted(p for t, p in current if t == topic)
        factor = len(current[(topic, partitions[0])])
        try:
            placement = place_replicas(brokers, len(partitions), factor, start=index)
        except ControllerError as exc:
            raise error_for_code(exc.error, f"topic {topic}: {exc.message}") from None
        proposed.update(((topic, p), replicas) for p, replicas in zip(partitions, placement))
    return proposed


def _generate(cluster: Cluster, topics: list[str], broker_ids: list[int], disable_rack_aware: bool) -> None:
    registered = {b["id"]: b for b in describe_cluster(cluster)["brokers"]}
    unknown = sorted(set(broker_ids) - set(registered))
    if unknown:
        raise error_for_code(Errors.BROKER_NOT_AVAILABLE, f"unknown broker id(s) {unknown} in --broker-list")
    brokers = [PlacementBroker(b, None if disable_rack_aware else registered[b]["rack"]) for b in broker_ids]
    current = current_assignment(cluster, topics)
    print("Current partition replica assignment")
    print(reassignment_json(current))
    print()
    print("Proposed partition reassignment configuration")
    print(reassignment_json(propose(current, brokers)))


def _names(partitions: Sequence[TopicPartition]) -> str:
    return ",".join(f"{t}-{p}" for t, p in sorted(partitions))


def _execute(cluster: Cluster, targets: dict[TopicPartition, list[int]], throttle: int, additional: bool) -> None:
    current = current_assignment(cluster, [t for t, _ in targets])
    missing = [tp for tp in targets if tp not in current]
    if missing:
        raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no such partition(s): {_names(missing)}")
    registered = {b["id"] for b in describe_cluster(cluster)["brokers"]}
    unknown = sorted({b for replicas in targets.values() for b in replicas} - registered)
    if unknown:
        raise error_for_code(Errors.INVALID_REPLICA_ASSIGNMENT, f"unknown broker id(s) {unknown}")
    if not additional and list_partition_reassignments(cluster):
        raise error_for_code(Errors.REASSIGNMENT_IN_PROGRESS, "cannot execute: partition reassignments are under "
                             "way; give --additional to start these as well")
    print("Current partition replica assignment")
    print()
    print(reassignment_json({tp: current[tp] for tp in targets}))
    print()
    print("Save this to use as the --reassignment-json-file option during rollback")
    if throttle != NO_THROTTLE:
        apply_throttles(cluster, {tp: (current[tp], target) for tp, target in targets.items()}, throttle)
        print("Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
              "throttle is removed.")
        print(f"The inter-broker throttle limit was set to {throttle} B/s")
    outcomes = alter_partition_reassignments(cluster, dict(targets))
    _report(outcomes, "Successfully started partition reassignments for", "Error reassigning partition(s):")


def _report(outcomes: list[dict[str, Any]], done: str, failed: str, ignore: str = "") -> list[TopicPartition]:
    """Print what was done and what failed (exit 1 then); the partitions done."""
    ok = [(o["topic"], o["partition"]) for o in outcomes if o["error"] is None]
    errors = [o for o in outcomes if o["error"] not in (None, ignore)]
    if ok:
        print(f"{done} {_names(ok)}")
    if errors:
        print(failed)
        for o in errors:
            print(f"{o['topic']}-{o['partition']}: {o['error']}" + (f": {o['message']}" if o["message"] else ""))
        raise typer.Exit(1)
    return ok


def partition_states(targets: Mapping[TopicPartition, Sequence[int]],
                     current: Mapping[TopicPartition, Sequence[int]],
                     under_way: Mapping[TopicPartition, Any]) -> list[dict[str, Any]]:
    """Per partition of `targets`: {"topic", "partition", "state": "in progress" | "completed" |
    "elsewhere" (no move under way, but the replicas are not the target's) | "missing",
    "replicas", "target"}."""
    states = []
    for (topic, partition), target in sorted(targets.items()):
        replicas = list(current.get((topic, partition), []))
        if (topic, partition) in under_way:
            state = "in progress"
        elif (topic, partition) not in current:
            state = "missing"
        else:
            state = "completed" if replicas == list(target) else "elsewhere"
        states.append({"topic": topic, "partition": partition, "state": state, "replicas": replicas,
                       "target": list(target)})
    return states


def _verify(cluster: Cluster, targets: dict[TopicPartition, list[int]], preserve_throttles: bool,
            as_json: bool) -> None:
    topics = sorted({t for t, _ in targets})
    wanted: dict[str, list[int]] = {}
    for topic, partition in targets:
        wanted.setdefault(topic, []).append(partition)
    # The moves first (the controller's), then the replicas (a broker's image, which follows
    # the controller's a moment later): a move done in between reads as done, not as elsewhere.
    under_way = list_partition_reassignments(cluster, wanted)
    states = partition_states(targets, _existing_assignment(cluster, topics), under_way)
    cleared = not preserve_throttles and all(s["state"] != "in progress" for s in states)
    brokers = _clear_throttles(cluster, topics) if cleared else []
    if as_json:
        print_json({"partitions": states, "throttles_cleared": cleared})
        return
    print("Status of partition reassignment:")
    for s in states:
        name = f"{s['topic']}-{s['partition']}"
        if s["state"] == "in progress":
            print(f"Reassignment of partition {name} is still in progress.")
        elif s["state"] == "completed":
            print(f"Reassignment of partition {name} is completed.")
        elif s["state"] == "missing":
            print(f"Partition {name} does not exist.")
        else:
            print(f"There is no active reassignment of partition {name}, but replica set is "
                  f"{','.join(map(str, s['replicas']))} rather than {','.join(map(str, s['target']))}.")
    if cleared:
        _print_cleared(brokers, topics)


def _clear_throttles(cluster: Cluster, topics: Sequence[str]) -> list[int]:
    """Kafka's --verify and --cancel: the throttles of these topics and of every broker go; the brokers."""
    brokers = sorted(b["id"] for b in describe_cluster(cluster)["brokers"])
    clear_throttles(cluster, topics, brokers)
    return brokers


def _print_cleared(brokers: Sequence[int], topics: Sequence[str]) -> None:
    print(f"Clearing broker-level throttles on brokers {','.join(map(str, brokers))}")
    for topic in topics:
        print(f"Clearing topic-level throttles on topic {topic}")


def _existing_assignment(cluster: Cluster, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
    """current_assignment of the topics that exist (a deleted topic's partitions are reported missing)."""
    found: dict[TopicPartition, list[int]] = {}
    for topic in topics:
        try:
            found.update(current_assignment(cluster, [topic]))
        except KafkaError as exc:
            if exc.code != Errors.UNKNOWN_TOPIC_OR_PARTITION:
                raise
    return found


def _cancel(cluster: Cluster, targets: dict[TopicPartition, list[int]], preserve_throttles: bool) -> None:
    outcomes = alter_partition_reassignments(cluster, {tp: None for tp in targets})
    cancelled = _report(outcomes, "Successfully cancelled partition reassignments for:",
                        "Error cancelling partition reassignment(s):", ignore="NO_REASSIGNMENT_IN_PROGRESS")
    if not cancelled:
        print("None of the specified partition moves are active.")
    if not preserve_throttles:
        topics = sorted({t for t, _ in targets})
        _print_cleared(_clear_throttles(cluster, topics), topics)


def _list(cluster: Cluster, as_json: bool) -> None:
    under_way = list_partition_reassignments(cluster)
    if as_json:
        print_json([{"topic": t, "partition": p, **moves} for (t, p), moves in sorted(under_way.items())])
        return
    if not under_way:
        print("No partition reassignments found.")
        return
    print("Current partition reassignments:")
    for (topic, partition), moves in sorted(under_way.items()):
        print(f"{topic}-{partition}: replicas: {','.join(map(str, moves['replicas']))}. "
              f"adding: {','.join(map(str, moves['adding_replicas']))}. "
              f"removing: {','.join(map(str, moves['removing_replicas']))}.")
