"""`kraftlog server --config FILE`: run one node until SIGTERM or SIGINT."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kraftlog_server.server_config import ServerConfig

from .common import NODE_CONFIG_ENV


def register(app: typer.Typer) -> None:
    app.command("server")(server)


def server(
    config: Annotated[Path, typer.Option(
        "--config", metavar="FILE", help="The node's YAML file of Kafka-named properties.",
        envvar=NODE_CONFIG_ENV, show_default=False)],
) -> None:
    """Run one node (process.roles: controller, broker, or both), serving gRPC on
    its listeners until SIGTERM or SIGINT. Logs go to stderr."""
    loaded = ServerConfig.load(config)
    for warning in loaded.warnings:
        typer.echo(f"kraftlog server: warning: {config}: {warning}", err=True)
    # kio registers a hypothesis strategy for each of its types whenever hypothesis can be
    # imported (a test dependency): a node never draws one, and a broker's start-up would
    # spend about 0.4 s of CPU on hypothesis and the registrations. Unless already loaded,
    # hypothesis is unimportable in a node, and kio skips them.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    # Imported here: the node's whole stack is only needed by this command.
    from kraftlog_server.server import run

    sys.exit(run(loaded))
