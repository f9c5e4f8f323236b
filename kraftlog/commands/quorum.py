"""`kraftlog quorum describe`: the metadata quorum as its leader sees it,
like Kafka's `kafka-metadata-quorum.sh describe --status --replication`."""
from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from client.admin import describe_quorum

quorum_app = typer.Typer(help="The metadata quorum (KRaft controllers).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(quorum_app, name="quorum")


@quorum_app.command("describe")
def describe(
    bootstrap: Annotated[str, typer.Option(
        "--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT...]",
        help="Controllers to ask; only the leader answers, so give every one you know.",
        show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the description as one JSON object.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to look for the leader.")] = 5.0,
) -> None:
    """Print the leader, its epoch and high watermark, and each replica's progress."""
    info = describe_quorum(bootstrap, timeout=timeout)
    if as_json:
        print(json.dumps(info))
        return
    console = output_console()
    console.print(status_table(info))
    console.print(replication_table(info))


def output_console() -> Console:
    """A console for tables; into a pipe or file, wide enough that no column is cut."""
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 160)
    return console


def status_table(info: dict[str, Any]) -> Table:
    table = Table(show_header=False, box=None)
    lags = [lag for r in info["voters"] if r["replica_id"] != info["leader_id"]
            if (lag := _lag(info, r)) is not None]
    for name, value in (
        ("LeaderId", info["leader_id"]),
        ("LeaderEpoch", info["leader_epoch"]),
        ("HighWatermark", info["high_watermark"]),
        ("MaxFollowerLag", max(lags, default=0)),
        ("CurrentVoters", _ids(info["voters"])),
        ("CurrentObservers", _ids(info["observers"])),
    ):
        table.add_row(f"{name}:", str(value))
    return table


def replication_table(info: dict[str, Any]) -> Table:
    table = Table("NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status",
                  box=box.SIMPLE_HEAD)
    rows = [(r, "Leader" if r["replica_id"] == info["leader_id"] else "Follower") for r in info["voters"]]
    rows += [(r, "Observer") for r in info["observers"]]
    for replica, status in rows:
        table.add_row(
            str(replica["replica_id"]), _known(replica["log_end_offset"]), _known(_lag(info, replica)),
            _known(replica["last_fetch_timestamp"]), _known(replica["last_caught_up_timestamp"]), status)
    return table


def _lag(info: dict[str, Any], replica: dict[str, Any]) -> int | None:
    """How far the replica's log end is behind the leader's, as Kafka counts it."""
    leader = next((r for r in info["voters"] if r["replica_id"] == info["leader_id"]), None)
    if leader is None or leader["log_end_offset"] < 0 or replica["log_end_offset"] < 0:
        return None
    return max(0, leader["log_end_offset"] - replica["log_end_offset"])


def _known(value: int | None) -> str:
    return "-" if value is None or value < 0 else str(value)


def _ids(replicas: list[dict[str, Any]]) -> str:
    return "[" + ",".join(str(r["replica_id"]) for r in replicas) + "]"
