"""`kraftlog groups list|describe|reset-offsets|delete`, like Kafka's kafka-consumer-groups.sh."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from client.group_admin import delete_groups, describe_group, list_groups, reset_offsets

from .common import BootstrapOption, ClusterTarget, CommandConfigOption, JsonOption, output_console, print_json

groups_app = typer.Typer(help="List, describe, reset and delete consumer groups.", no_args_is_help=True)
GroupArgument = Annotated[str, typer.Argument(help="The group id.", show_default=False)]


def register(app: typer.Typer) -> None:
    app.add_typer(groups_app, name="groups")


@groups_app.command("list")
def list_command(as_json: JsonOption = False, bootstrap: BootstrapOption = None,
                 command_config: CommandConfigOption = None) -> None:
    """Every consumer group with its state and coordinator."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    groups = list_groups(servers, security=security)
    if as_json:
        print_json(groups)
        return
    table = Table("Group", "State", "Coordinator", box=box.SIMPLE_HEAD)
    for g in groups:
        table.add_row(g["group"], g["state"], str(g["coordinator"]))
    output_console().print(table)


@groups_app.command("describe")
def describe(
    group: GroupArgument,
    members: Annotated[bool, typer.Option("--members", help="Also each member's assignment.")] = False,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Committed offset, log end and lag of each partition, and the member that owns it."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    info = describe_group(servers, group, security=security)
    if as_json:
        print_json(info)
        return
    console = output_console()
    console.print(f"Group: {info['group']}  State: {info['state']}  Coordinator: {info['coordinator']}  "
                  f"Assignor: {info['assignor'] or '-'}  Members: {len(info['members'])}", markup=False,
                  highlight=False)
    table = Table("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                  "CLIENT-ID", box=box.SIMPLE_HEAD)
    for o in info["offsets"]:
        table.add_row(group, o["topic"], str(o["partition"]), *(_shown(o[k]) for k in (
            "committed", "log_end", "lag", "member_id", "host", "client_id")))
    console.print(table)
    if members and info["members"]:
        table = Table("CONSUMER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT", box=box.SIMPLE_HEAD)
        for m in info["members"]:
            assignment = " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in m["assignment"].items())
            table.add_row(m["member_id"], m["client_id"], m["host"], str(m["member_epoch"]), assignment or "-")
        console.print(table)


def _shown(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


@groups_app.command("reset-offsets")
def reset_offsets_command(
    group: GroupArgument,
    topic: Annotated[list[str], typer.Option(
        "--topic", metavar="TOPIC[:P,P...]", help="A topic, or some of its partitions (repeatable).")] = [],
    all_topics: Annotated[bool, typer.Option("--all-topics", help="Every partition the group committed.")] = False,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="The log start.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="The log end.")] = False,
    to_offset: Annotated[Optional[int], typer.Option("--to-offset", help="This offset (kept within the log).",
                                                     show_default=False)] = None,
    to_datetime: Annotated[Optional[str], typer.Option(
        "--to-datetime", metavar="ISO-8601", help="The first record at or after this time, e.g. "
        "2024-05-01T12:00:00 (local time unless an offset like +02:00 or Z is given).", show_default=False)] = None,
    shift_by: Annotated[Optional[int], typer.Option("--shift-by", help="Move committed offsets by N (+/-).",
                                                    show_default=False)] = None,
    execute: Annotated[bool, typer.Option("--execute/--dry-run", help="Commit the new offsets; the default "
                                          "only shows them.")] = False,
    as_json: JsonOption = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Move a group's committed offsets. The group must have no active members."""
    strategy = _strategy(to_earliest, to_latest, to_offset, to_datetime, shift_by)
    if all_topics == bool(topic):
        raise typer.BadParameter("give either --topic (repeatable) or --all-topics")
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    plan = reset_offsets(servers, group, None if all_topics else _topics(topic), strategy, execute,
                         security=security)
    if as_json:
        print_json({"executed": execute, "offsets": plan})
        return
    table = Table("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", box=box.SIMPLE_HEAD)
    for p in plan:
        table.add_row(group, p["topic"], str(p["partition"]), _shown(p["current"]), str(p["new"]))
    console = output_console()
    console.print(table)
    if not execute:
        console.print("Dry run: nothing was committed; add --execute to commit these offsets.", highlight=False)


def _strategy(earliest: bool, latest: bool, offset: Optional[int], when: Optional[str],
              shift: Optional[int]) -> tuple[str, Any]:
    chosen = [(name, value) for name, value, given in (
        ("earliest", None, earliest), ("latest", None, latest), ("offset", offset, offset is not None),
        ("datetime", when, when is not None), ("shift", shift, shift is not None)) if given]
    if len(chosen) != 1:
        raise typer.BadParameter("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, "
                                 "--shift-by")
    name, value = chosen[0]
    if name == "offset" and value < 0:
        raise typer.BadParameter("must be 0 or more", param_hint="--to-offset")
    if name == "datetime":
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise typer.BadParameter("expected an ISO-8601 time such as 2024-05-01T12:00:00",
                                     param_hint="--to-datetime") from None
        value = int(moment.timestamp() * 1000)  # a naive time is local time, as in Kafka's tool
    return name, value


def _topics(items: list[str]) -> dict[str, Optional[list[int]]]:
    topics: dict[str, Optional[list[int]]] = {}
    for item in items:
        name, _, partitions = item.partition(":")
        if not name:
            raise typer.BadParameter(f"{item!r}: expected TOPIC or TOPIC:P,P", param_hint="--topic")
        if not partitions:
            topics[name] = None
            continue
        try:
            ids = [int(p) for p in partitions.split(",")]
        except ValueError:
            raise typer.BadParameter(f"{item!r}: partitions are numbers, e.g. {name}:0,2",
                                     param_hint="--topic") from None
        topics[name] = sorted(set(ids) | set(topics.get(name) or ()))
    return topics


@groups_app.command("delete")
def delete(
    groups: Annotated[list[str], typer.Argument(help="Group ids.", show_default=False)],
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Delete groups without members, and their committed offsets."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    delete_groups(servers, groups, security=security)
    for group in groups:
        print(f"Deleted consumer group {group}.")
