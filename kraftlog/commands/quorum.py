"""`kraftlog quorum describe [--status|--replication]`: the metadata quorum as its
leader sees it, like Kafka's `kafka-metadata-quorum.sh describe`."""
from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from client.admin import describe_cluster, describe_quorum
from client.cluster import Cluster
from client.errors import KafkaError
from security.client_security import ClientSecurity

from .common import BootstrapOption, ClusterTarget, CommandConfigOption, output_console, print_json

quorum_app = typer.Typer(help="The metadata quorum (KRaft controllers).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(quorum_app, name="quorum")


@quorum_app.command("describe")
def describe(
    bootstrap_controller: Annotated[str, typer.Option(
        "--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT...]",
        help="Controllers to ask: any one will do (a follower says where the leader is).",
        show_default=False)],
    status: Annotated[bool, typer.Option("--status", help="Only the leader, epoch, high watermark and lags.")] = False,
    replication: Annotated[bool, typer.Option("--replication", help="Only each replica's progress.")] = False,
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the description as one JSON object.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to look for the leader.")] = 5.0,
) -> None:
    """Print the quorum's status and each replica's progress (both unless one is asked for).
    ClusterId comes from a broker (--bootstrap or $KRAFTLOG_BOOTSTRAP): controllers do not say it.
    --command-config's security settings are used for both."""
    target = ClusterTarget(bootstrap, command_config)
    settings = target.settings()
    security = target.security(settings)  # for the controllers and the broker alike, as Kafka's tool
    info = describe_quorum(bootstrap_controller, timeout=timeout, security=security)
    info["cluster_id"] = _cluster_id(target.given_servers(settings), security)
    fields = status_fields(info)
    rows = replication_rows(info)
    if as_json:
        print_json({**info, "status": fields, "replication": rows})
        return
    console = output_console()
    both = status == replication
    if status or both:
        table = Table(show_header=False, box=None)
        for name, value in fields.items():
            table.add_row(f"{name}:", "unknown" if value is None else str(value))
        console.print(table)
    if replication or both:
        table = Table(*rows[0].keys() if rows else (), box=box.SIMPLE_HEAD)
        for row in rows:
            table.add_row(*("-" if v is None else str(v) for v in row.values()))
        console.print(table)


def _cluster_id(servers: Optional[str], security: ClientSecurity) -> Optional[str]:
    if not servers:
        return None
    try:
        with Cluster(servers, security) as cluster:
            return str(describe_cluster(cluster)["cluster_id"])
    except KafkaError:
        return None  # the quorum's own description does not depend on it


def status_fields(info: dict[str, Any]) -> dict[str, Any]:
    """Kafka's --status lines. The follower lag is the largest among voters; its time is how far the
    leader's last caught-up time is ahead of that follower's (Kafka's MaxFollowerLagTimeMs)."""
    leader = _leader(info)
    followers = [r for r in info["voters"] if r["replica_id"] != info["leader_id"] and r["log_end_offset"] >= 0]
    laggard = min(followers, key=lambda r: r["log_end_offset"], default=None)
    lag = lag_time = 0
    if laggard is not None and leader is not None:
        lag = max(0, leader["log_end_offset"] - laggard["log_end_offset"])
        if lag and leader["last_caught_up_timestamp"] >= 0 and laggard["last_caught_up_timestamp"] >= 0:
            lag_time = max(0, leader["last_caught_up_timestamp"] - laggard["last_caught_up_timestamp"])
        elif lag:
            lag_time = -1
    return {
        "ClusterId": info.get("cluster_id"),
        "LeaderId": info["leader_id"],
        "LeaderEpoch": info["leader_epoch"],
        "HighWatermark": info["high_watermark"],
        "MaxFollowerLag": lag,
        "MaxFollowerLagTimeMs": lag_time,
        "CurrentVoters": _ids(info["voters"]),
        "CurrentObservers": _ids(info["observers"]),
    }


def replication_rows(info: dict[str, Any]) -> list[dict[str, Any]]:
    """Kafka's --replication table: one row per voter and observer; None where unknown."""
    roles = [(r, "Leader" if r["replica_id"] == info["leader_id"] else "Follower") for r in info["voters"]]
    roles += [(r, "Observer") for r in info["observers"]]
    return [{
        "NodeId": r["replica_id"],
        "LogEndOffset": _known(r["log_end_offset"]),
        "Lag": _lag(info, r),
        "LastFetchTimestamp": _known(r["last_fetch_timestamp"]),
        "LastCaughtUpTimestamp": _known(r["last_caught_up_timestamp"]),
        "Status": role,
    } for r, role in roles]


def _leader(info: dict[str, Any]) -> Optional[dict[str, Any]]:
    return next((r for r in info["voters"] if r["replica_id"] == info["leader_id"]), None)


def _lag(info: dict[str, Any], replica: dict[str, Any]) -> Optional[int]:
    """How far the replica's log end is behind the leader's, as Kafka counts it."""
    leader = _leader(info)
    if leader is None or leader["log_end_offset"] < 0 or replica["log_end_offset"] < 0:
        return None
    return max(0, leader["log_end_offset"] - replica["log_end_offset"])


def _known(value: int) -> Optional[int]:
    return None if value < 0 else value


def _ids(replicas: list[dict[str, Any]]) -> str:
    return "[" + ",".join(str(r["replica_id"]) for r in replicas) + "]"
