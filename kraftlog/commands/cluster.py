"""`kraftlog cluster up|status|down`: a local cluster from one YAML file,
each node a background `kraftlog server` process (see deploy/README.md);
`kraftlog cluster roll`: restart its nodes one at a time (devcluster/roll.py);
`kraftlog cluster describe`: any running cluster's brokers as a broker sees them;
`kraftlog cluster unregister --id N`: a decommissioned broker's registration removed."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from client.admin import describe_cluster
from client.reassignments import unregister_broker
from kafka_protocol.errors import InvalidConfigError

from .common import BootstrapOption, CommandConfigOption, JsonOption, connect, output_console, print_json
from kraftlog_server.server_config import format_address, local_dial_host

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


@cluster_app.command("render")
def render(
    config: ClusterFile,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Where to write node-<id>.yaml per node.",
                                      show_default=False)],
    data_dir: Annotated[str, typer.Option("--data-dir", metavar="DIR",
                                          help="log.dirs on each node's host: DIR/node-<id>.")] = "/var/lib/kraftlog",
    config_dir: Annotated[str, typer.Option(
        "--config-dir", metavar="DIR", help="Where the files go on each host (TLS certificates: DIR/certs/).")]
        = "/etc/kraftlog",
    node_id: Annotated[Optional[int], typer.Option(
        "--node-id", metavar="ID", show_default=False,
        help="Write only this node's file (every node is still checked): what one host renders for itself.")]
        = None,
) -> None:
    """Write one node file per node, for nodes on their own hosts: listeners,
    advertised listeners at each node's `host`, the quorum, data and certificate
    paths. Nothing is written if a node's file would not start (see deploy/README.md)."""
    from pathlib import PurePosixPath

    from devcluster import launcher, render as rendering
    try:
        spec = launcher.parse_cluster(config.read_text(encoding="utf-8"))
        nodes = rendering.render_nodes(spec, PurePosixPath(data_dir), PurePosixPath(config_dir))
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"{config}: {exc.args[0] if exc.args else exc}") from None
    if node_id is not None:
        nodes = tuple(node for node in nodes if node.node_id == node_id)
        if not nodes:
            raise InvalidConfigError(f"{config}: --node-id: no node {node_id} in the file")
        if spec.quorum == launcher.DYNAMIC:  # each host would make directory ids of its own
            raise InvalidConfigError(f"{config}: --node-id: a dynamic quorum is rendered for every node at once, "
                                     "so that every controller is formatted with the same --initial-controllers")
    # One host rendering its own file makes no certificates: a CA per host would trust no other.
    certificates = spec.tls and node_id is None
    rendering.write_rendered(nodes, out, str(config), certificates, PurePosixPath(config_dir))
    for node in nodes:
        formatted = f", format first: {out / node.format_file_name}" if node.dynamic else ""
        typer.echo(f"node {node.node_id} ({','.join(node.config.process_roles)}) on {node.host}: "
                   f"{out / node.file_name}{formatted}")
    if certificates:
        typer.echo(f"certificates: {out / launcher.CERTS_DIR} (give each host ca.pem and its node-<id>.pem; "
                   "keep ca.key off the nodes)")
    elif spec.tls:
        typer.echo(f"no certificates written (--node-id): put the CA's ca.pem and node-{node_id}.pem "
                   f"in {config_dir}/certs/")


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


@cluster_app.command("roll")
def roll(
    config: ClusterFile,
    data_dir: DataDir = None,
    brokers_only: Annotated[bool, typer.Option("--brokers-only", help="Restart only the nodes with the broker role.")] = False,
    controllers_only: Annotated[bool, typer.Option(
        "--controllers-only", help="Restart only the nodes with the controller role.")] = False,
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Seconds each restarted node has to bring the cluster back to health.")] = 120.0,
) -> None:
    """Restart the nodes one at a time (controllers first, the active one last;
    then brokers), each only once the last is back, the quorum stable and
    caught up and no partition under-replicated (devcluster/roll.py). Exits 1
    where the cluster does not get healthy in time; the rest stay untouched."""
    from devcluster import launcher, roll as rolling
    if brokers_only and controllers_only:
        typer.echo("kraftlog cluster roll: --brokers-only and --controllers-only exclude each other", err=True)
        raise typer.Exit(2)
    plans = launcher.plan_cluster(config, data_dir)
    try:
        report = rolling.roll(plans, timeout_s=timeout, brokers_only=brokers_only,
                              controllers_only=controllers_only, on_event=typer.echo)
    except rolling.RollError as exc:
        typer.echo(f"kraftlog cluster roll: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"rolled {len(report.nodes)} node(s) in {report.seconds:.1f}s")


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


@cluster_app.command("unregister")
def unregister(
    broker_id: Annotated[int, typer.Option("--id", help="The broker to unregister.", show_default=False)],
    bootstrap: BootstrapOption = None,
    command_config: CommandConfigOption = None,
) -> None:
    """Remove a decommissioned broker's registration (Kafka's kafka-cluster.sh unregister): move
    its partitions away first (reassign-partitions) and stop it; a broker still running
    registers again. It leaves every ISR and leadership it still has."""
    with connect(bootstrap, command_config) as cluster:
        unregister_broker(cluster, broker_id)
    print(f"Broker {broker_id} is no longer registered.")


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
    return f"http://{format_address(local_dial_host(host), port)}/metrics"


def _data_dir(config: Path, data_dir: Path | None) -> Path:
    from devcluster import launcher
    return (data_dir or launcher.default_data_dir(config)).absolute()
