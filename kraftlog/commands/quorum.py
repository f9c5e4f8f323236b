"""`kraftlog quorum describe [--status|--replication]`: the metadata quorum as its
leader sees it, like Kafka's `kafka-metadata-quorum.sh describe`; and, for a
dynamic quorum (KIP-853), `kraftlog quorum add-controller | remove-controller`,
like its commands of the same names.

A dynamic quorum's voters show with their directory ids and endpoints, in
Kafka 3.9's form: CurrentVoters: [{"id": 1, "directoryId": "...",
"endpoints": ["CONTROLLER://host:9093"]}, ...]; a static quorum's as before,
[1,2,3]."""
from __future__ import annotations

from typing import Annotated, Any, Optional

import json
from pathlib import Path

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
        "CurrentVoters": _replicas(info["voters"], info.get("endpoints", {})),
        "CurrentObservers": _replicas(info["observers"], {}),
    }


def replication_rows(info: dict[str, Any]) -> list[dict[str, Any]]:
    """Kafka's --replication table: one row per voter and observer; None where unknown."""
    roles = [(r, "Leader" if r["replica_id"] == info["leader_id"] else "Follower") for r in info["voters"]]
    roles += [(r, "Observer") for r in info["observers"]]
    dynamic = any(r.get("directory_id") for r, _ in roles)
    return [{
        "NodeId": r["replica_id"],
        **({"DirectoryId": r.get("directory_id")} if dynamic else {}),
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


def _replicas(replicas: list[dict[str, Any]], endpoints: dict[str, list[str]]) -> str:
    if not any(r.get("directory_id") for r in replicas):
        return "[" + ",".join(str(r["replica_id"]) for r in replicas) + "]"
    described = []
    for r in replicas:
        entry: dict[str, Any] = {"id": r["replica_id"], "directoryId": r.get("directory_id")}
        if endpoints:
            entry["endpoints"] = endpoints.get(str(r["replica_id"]), [])
        described.append(entry)
    return json.dumps(described, separators=(", ", ": "))


# --- KIP-853: add-controller / remove-controller ------------------------------------------

ControllerOption = Annotated[str, typer.Option(
    "--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT...]",
    help="Controllers to ask: any one will do (a follower says where the leader is).", show_default=False)]


@quorum_app.command("add-controller")
def add_controller(
    bootstrap_controller: ControllerOption,
    config: Annotated[Optional[Path], typer.Option(
        "--config", "-c", metavar="FILE", help="The new controller's YAML file: its node.id, controller listener "
        "and the directory.id in its formatted metadata.log.dir.", show_default=False)] = None,
    controller_id: Annotated[Optional[int], typer.Option(
        "--controller-id", metavar="N", help="The controller's node.id (else from --config).", show_default=False)] = None,
    directory_id: Annotated[Optional[str], typer.Option(
        "--controller-directory-id", metavar="UUID",
        help="The directory.id of its metadata.log.dir (else from --config).", show_default=False)] = None,
    endpoint: Annotated[Optional[str], typer.Option(
        "--controller-endpoint", metavar="[NAME://]HOST:PORT",
        help="Where it serves the quorum (else its controller listener in --config).", show_default=False)] = None,
    command_config: CommandConfigOption = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the change to commit.")] = 30.0,
) -> None:
    """Make a controller that fetches as an observer (and has caught up) a voter."""
    node_id, directory, listener, cluster_id = _new_controller(config, controller_id, directory_id, endpoint)
    from client.quorum_admin import add_voter

    target = ClusterTarget(None, command_config)
    answer = add_voter(bootstrap_controller, node_id, directory, [listener], cluster_id=cluster_id,
                       timeout=timeout, security=target.security(target.settings()))
    print(f"Added controller {node_id} (directory {directory}) to the voters; leader {answer.leader_id}, "
          f"epoch {answer.leader_epoch}.")


@quorum_app.command("remove-controller")
def remove_controller(
    bootstrap_controller: ControllerOption,
    controller_id: Annotated[int, typer.Option("--controller-id", metavar="N", help="The voter's node id.",
                                               show_default=False)],
    directory_id: Annotated[str, typer.Option(
        "--controller-directory-id", metavar="UUID", help="The voter's directory id (quorum describe --status).",
        show_default=False)],
    command_config: CommandConfigOption = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the change to commit.")] = 30.0,
) -> None:
    """Remove a voter; a leader removing itself hands over once the change commits."""
    from client.quorum_admin import remove_voter

    target = ClusterTarget(None, command_config)
    answer = remove_voter(bootstrap_controller, controller_id, directory_id, timeout=timeout,
                          security=target.security(target.settings()))
    print(f"Removed controller {controller_id} (directory {directory_id}) from the voters; "
          f"leader {answer.leader_id}, epoch {answer.leader_epoch}.")


def _new_controller(config: Optional[Path], node_id: Optional[int], directory_id: Optional[str],
                    endpoint: Optional[str]) -> tuple[int, str, tuple[str, str, int], str]:
    """(node id, directory id, (listener name, host, port), cluster id or "") from the
    options, else the node's files."""
    from kraftlog_server.server_config import ServerConfig, parse_host_port

    name, host, port = "CONTROLLER", "", 0
    cluster_id = ""
    if config is not None:
        loaded = ServerConfig.load(config)
        if not loaded.is_controller:
            raise typer.BadParameter(f"{config} is not a controller's config", param_hint="--config")
        from metadata_quorum.storage import MetaProperties

        meta = MetaProperties.read(Path(loaded.metadata_log_dir))
        node_id = loaded.node_id if node_id is None else node_id
        directory_id = directory_id or (meta.directory_id if meta is not None else None)
        own = loaded.controller_endpoint()
        name, host, port = own.name, own.host, own.port
        cluster_id = loaded.cluster_id
    if endpoint is not None:
        scheme, sep, address = endpoint.rpartition("://")
        name = scheme if sep else name
        host, port = parse_host_port("--controller-endpoint", address)
    if node_id is None or node_id < 0:
        raise typer.BadParameter("a node id >= 0 is required (--controller-id or --config)", param_hint="--controller-id")
    if not directory_id:
        raise typer.BadParameter("required (--controller-directory-id, or --config of a formatted controller)",
                                 param_hint="--controller-directory-id")
    if not host or not port:
        raise typer.BadParameter("required (--controller-endpoint or --config)", param_hint="--controller-endpoint")
    return node_id, directory_id, (name, host, port), cluster_id
