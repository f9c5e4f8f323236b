"""`kraftlog chaos check`: run the linearizability checker on a recorded history."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from chaos import lincheck

chaos_app = typer.Typer(help="Fault-injection runs and their checkers.", no_args_is_help=True)


@chaos_app.command("check")
def check(
    history: Path = typer.Argument(..., help="history.jsonl of a run, or a Jepsen etcd log"),
    fmt: str = typer.Option("history", "--format", help="history (ours) or jepsen-etcd"),
    model: str = typer.Option(None, "--model", help="log (default), kv, offsets, metadata or register"),
    time_limit: float = typer.Option(10.0, "--time-limit", help="seconds before answering unknown"),
    html: Path = typer.Option(None, "--html", help="also draw the verdict into this HTML file"),
) -> None:
    """Print the checker's verdict JSON; exit 0 ok, 1 illegal, 2 unknown, 3 unreadable file."""
    if fmt not in lincheck.FORMATS:
        typer.echo(f"kraftlog: error: --format must be history or jepsen-etcd, not {fmt!r}", err=True)
        raise typer.Exit(lincheck.UNREADABLE)
    if not history.is_file():
        typer.echo(f"kraftlog: error: {history}: no such file", err=True)
        raise typer.Exit(lincheck.UNREADABLE)
    try:
        verdict = lincheck.check(history, model=model or ("register" if fmt == "jepsen-etcd" else "log"),
                                 fmt=fmt, time_limit=time_limit, html=html)
    except lincheck.CheckerUnavailable as exc:
        typer.echo(f"kraftlog: error: {exc}", err=True)
        raise typer.Exit(lincheck.UNKNOWN) from None
    if verdict.result is not None:
        typer.echo(json.dumps(verdict.result))
    if verdict.stderr:
        sys.stderr.write(verdict.stderr)
    # the checker's own 4 (bad usage) is an unreadable request as far as the user is concerned
    raise typer.Exit(verdict.exit_code if verdict.exit_code <= lincheck.UNREADABLE else lincheck.UNREADABLE)


def register(app: typer.Typer) -> None:
    app.add_typer(chaos_app, name="chaos")
