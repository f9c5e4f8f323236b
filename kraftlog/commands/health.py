"""`kraftlog health`: is a node serving? The gRPC health check (grpc.health.v1)
of one address, or of every gRPC listener of a node file, as a container's
HEALTHCHECK or a Kubernetes probe runs it: exit 0 when all answer SERVING."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from security.client_security import ClientSecurity

from .common import NODE_CONFIG_ENV, ClusterTarget, CommandConfigOption


def register(app: typer.Typer) -> None:
    app.command("health")(health)


def health(
    address: Annotated[Optional[str], typer.Option(
        "--address", metavar="HOST:PORT", show_default=False,
        help="A listener to check (with --command-config for TLS).")] = None,
    config: Annotated[Optional[Path], typer.Option(
        "--config", metavar="FILE", show_default=False, envvar=NODE_CONFIG_ENV,
        help="A node file: check each of its gRPC listeners as the node itself would dial them.")] = None,
    service: Annotated[str, typer.Option("--service", help="A service name; empty: the whole server.")] = "",
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds to wait for each answer.")] = 5.0,
    command_config: CommandConfigOption = None,
) -> None:
    """Exit 0 if every listener checked answers SERVING, else 1 (one line per
    listener). --address, else the node file's listeners."""
    from client.health import SERVING, check_health
    if address is None and config is None:
        raise typer.BadParameter(f"give --address or --config (or set {NODE_CONFIG_ENV})")
    if address is not None:
        target = ClusterTarget(command_config=command_config)
        targets = [(address, target.security(target.settings()))]
    else:
        targets = node_targets(config)
    failed = False
    for target, security in targets:
        status = check_health(target, security, service, timeout)
        typer.echo(f"{target}: {status}")
        failed |= status != SERVING
    if failed:
        raise typer.Exit(1)


def node_targets(path: Path) -> list[tuple[str, ClientSecurity]]:
    """(HOST:PORT, ClientSecurity) of each gRPC listener a node file defines: a
    wildcard bind is checked on loopback, with the node's own TLS settings
    (its certificate, for mTLS). SASL listeners are left out: a node has no login of its own."""
    from kraftlog_server.server_config import ServerConfig, format_address, local_dial_host
    node = ServerConfig.load(path)
    targets = []
    for endpoint in node.listeners:
        protocol = node.listener_protocol(endpoint.name)
        if (node.is_broker and node.is_kafka_protocol(endpoint)) or protocol.uses_sasl:
            continue
        targets.append((format_address(local_dial_host(endpoint.host), endpoint.port),
                        ClientSecurity(protocol, node.client_ssl(endpoint.name))))
    return targets
