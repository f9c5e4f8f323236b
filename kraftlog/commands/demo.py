"""`kraftlog demo [--secure] [cluster|quorum|log ...]`: `make demo` from the
CLI (kraftlog/demo.py); `--secure` runs the cluster demo on a secured
cluster (kraftlog/demo_secure.py)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    parts: Annotated[Optional[list[str]], typer.Argument(help="cluster (default), quorum, log")] = None,
    secure: Annotated[bool, typer.Option("--secure", help="TLS with mTLS between nodes, a SCRAM admin "
                                                          "bootstrapped at format, the demo as a SASL_SSL "
                                                          "user held to its ACLs")] = False,
) -> None:
    """The demo: a real cluster through a broker failure, every acknowledged record checked."""
    from .. import demo as demo_module  # starts nothing until asked

    raise typer.Exit(demo_module.main([*(["--secure"] if secure else []), *(parts or [])]))
