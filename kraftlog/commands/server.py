"""`kraftlog server --config FILE`: run one node until SIGTERM or SIGINT."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kraftlog_server.server_config import ServerConfig


def register(app: typer.Typer) -> None:
    app.command("server")(server)


def server(
    config: Annotated[Path, typer.Option(
        "--config", metavar="FILE", help="The node's YAML file of Kafka-named properties.",
        show_default=False)],
) -> None:
    """Run one node (process.roles: controller, broker, or both), serving gRPC on
    its listeners until SIGTERM or SIGINT. Logs go to stderr."""
    loaded = ServerConfig.load(config)
    for warning in loaded.warnings:
        typer.echo(f"kraftlog server: warning: {config}: {warning}", err=True)
    # Imported here: the node's whole stack is only needed by this command.
    from kraftlog_server.server import run

    sys.exit(run(loaded))
