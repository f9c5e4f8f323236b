"""`kraftlog cluster up|status|down`: a local cluster from one YAML file,
each node a background `kraftlog server` process (see deploy/README.md);
`kraftlog cluster describe`: any running cluster's brokers as a broker sees them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from client.admin import describe_cluster

from .common import BootstrapOption, CommandConfigOption, JsonOption, connect, output_console, print_json
from kraftlog_server.server_config import WILDCARD_HOSTS, format_address

if TYPE_CHECKING:
    from devcluster import launcher

cluster_app = typer.Typer(help="Start, inspect and stop a local cluster described by a YAML file.",
                          no_args_is_help=True)

ClusterFile = Annotated[Path, typer.Option(
    "--config", metavar="FILE", help="The cluster file, e.g. deploy/quorum-3.yaml.", show_default=False)]
DataDir = Annotated[Optional[Path], typer.Option(
    "--data-dir", metavar="DIR", show_default=False,
    help="Where nodes keep their config, log, pid and data; default <tmp>/kraftlog-<cluster file name>.")]


def register(app: typer.Typer) -> None:
    app.add_typer(cluster_app, name="cluster")


@cluster_app.command("up")
def up(
    config: ClusterFile,
    data_dir: DataDir = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for a leader, and again for the brokers.")] = 30.0,
) -> None:
    """Start every node that is not running, then wait until the quorum has a
    leader and every broker is unfenced. Exits 1, with the end of each node's
    log, if that does not happen in time."""
    from devcluster import launcher  # here, not at the top: it loads the whole server stack, seconds of every command's start
    plans = launcher.plan_cluster(config, data_dir)
    typer.echo(f"data directory: {_data_dir(config, data_dir)}")
    for plan in plans:
        pid = launcher.running_pid(plan)
        if pid is not None:
            typer.echo(f"node {plan.node_id}: already running (pid {pid})")
        else:
            pid = launcher.start_node(plan)
            typer.echo(f"node {plan.node_id}: started (pid {pid}), log {plan.log_path}")
    try:
        info = launcher.wait_for_leader(plans, timeout)
        brokers = launcher.wait_for_brokers(plans, timeout)
    except launcher.LeaderNotFoundError as exc:
        typer.echo(f"kraftlog cluster up: {exc}", err=True)
        for plan in plans:
            typer.echo(f"--- node {plan.node_id}: end of {plan.log_path} ---", err=True)
            typer.echo(launcher.log_tail(plan), err=True)
        running = [str(plan.node_id) for plan in plans if launcher.running_pid(plan) is not None]
        if running:
            typer.echo(f"node {', '.join(running)} still running; stop with `kraftlog cluster down "
                       f"--config {config}" + (f" --data-dir {data_dir}`" if data_dir else "`"), err=True)
        raise typer.Exit(1) from None
    typer.echo(f"leader: node {info['leader_id']} (epoch {info['leader_epoch']})")
    if brokers:
        typer.echo(f"brokers unfenced: {', '.join(map(str, brokers))}; "
                   f"bootstrap: {launcher.broker_bootstrap(plans)}")


@cluster_app.command("status")
def status(
    config: ClusterFile,
    data_dir: DataDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Each node's id, roles, pid, whether it runs, its listeners and metrics URL; and the leader if reachable."""
    from devcluster import launcher
    plans = launcher.plan_cluster(config, data_dir)
    nodes = [_node_status(plan) for plan in plans]
    leader = launcher.describe_if_reachable(plans) if any(n["alive"] for n in nodes) else None
    summary = {
        "cluster_id": plans[0].config.cluster_id,
        "data_dir": str(_data_dir(config, data_dir)),
        "nodes": nodes,
        "leader": None if leader is None else {
            key: leader[key] for key in ("leader_id", "leader_epoch", "high_watermark")},
    }
    if as_json:
        print(json.dumps(summary))
        return
    table = Table("Id", "Roles", "Pid", "Alive", "Listeners", "Metrics", box=box.SIMPLE_HEAD)
    for node in nodes:
        table.add_row(str(node["id"]), ",".join(node["roles"]), "-" if node["pid"] is None else str(node["pid"]),
                      "yes" if node["alive"] else "no", ",".join(node["listeners"]), node["metrics"] or "-")
    console = output_console()
    console.print(table)
    lead = summary["leader"]
    console.print("leader: " + ("unknown" if lead is None else
                                f"node {lead['leader_id']} (epoch {lead['leader_epoch']})"))


@cluster_app.command("down")
def down(
    config: ClusterFile,
    data_dir: DataDir = None,
    grace: Annotated[float, typer.Option("--grace", help="Seconds after SIGTERM before SIGKILL.")] = 10.0,
) -> None:
    """Stop every node: SIGTERM, then SIGKILL after the grace period; removes the pid files."""
    from devcluster import launcher
    plans = launcher.plan_cluster(config, data_dir)
    outcome = launcher.stop_nodes(plans, grace=grace)
    for node_id, what in outcome.items():
        typer.echo(f"node {node_id}: {what}")
    if any(what.startswith("still running") for what in outcome.values()):
        raise typer.Exit(1)


@cluster_app.command("describe")
def describe(as_json: JsonOption = False, bootstrap: BootstrapOption = None,
                 command_config: CommandConfigOption = None) -> None:
    """The cluster id, the active controller and every registered broker: where it listens,
    whether it is fenced (out of the cluster) or in a controlled shutdown."""
    with connect(bootstrap, command_config) as cluster:
        info = describe_cluster(cluster)
    if as_json:
        print_json(info)
        return
    console = output_console()
    console.print(f"ClusterId: {info['cluster_id']}", markup=False, highlight=False)
    controller = info["controller_id"]
    console.print(f"ControllerId: {controller if controller >= 0 else 'unknown'}", highlight=False)
    table = Table("Id", "Host:Port", "Rack", "BrokerEpoch", "State", box=box.SIMPLE_HEAD)
    for b in info["brokers"]:
        state = ("fenced" if b["fenced"] else "unfenced") + (", controlled shutdown" if b["in_controlled_shutdown"]
                                                             else "")
        table.add_row(str(b["id"]), f"{b['host']}:{b['port']}", b["rack"] or "-", str(b["broker_epoch"]), state)
    console.print(table)


def _node_status(plan: launcher.NodePlan) -> dict[str, Any]:
    from devcluster import launcher
    pid = launcher.read_pid(plan)
    return {
        "id": plan.node_id,
        "roles": list(plan.config.process_roles),
        "pid": pid,
        "alive": pid is not None and launcher.is_alive(pid, plan.config_path),
        "listeners": [str(endpoint) for endpoint in plan.config.listeners],
        "metrics": _metrics_url(plan),
        "config": str(plan.config_path),
        "log": str(plan.log_path),
    }


def _metrics_url(plan: launcher.NodePlan) -> str | None:
    """Where Prometheus scrapes the node (a listener on every interface: via 127.0.0.1)."""
    if plan.config.metrics_listener is None:
        return None
    host, port = plan.config.metrics_listener
    if host in WILDCARD_HOSTS:
        host = "::1" if host == "::" else "127.0.0.1"
    return f"http://{format_address(host, port)}/metrics"


def _data_dir(config: Path, data_dir: Path | None) -> Path:
    from devcluster import launcher
    return (data_dir or launcher.default_data_dir(config)).absolute()
