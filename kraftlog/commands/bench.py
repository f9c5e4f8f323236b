"""`kraftlog bench`: the side-by-side benchmark suite (bench/suite/) -
kraftlog against this machine's limits, Redis Streams and NATS JetStream,
all started here and stopped by PID; results.json, PNG charts and a
Markdown table in --out."""
from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

SUITE_NAMES = ("all", "limits", "redis", "nats", "kraftlog")


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)


def bench(
    suite: Annotated[str, typer.Option("--suite", metavar="NAME",
                                       help=f"Which systems: {', '.join(SUITE_NAMES)}.")] = "all",
    quick: Annotated[bool, typer.Option("--quick", help="The smallest run (1 repetition, a few thousand "
                                                          "records): proves the harness, not the speed.")] = False,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Where results.json, the charts and "
                                                                     "results.md go.")] = Path("bench/results/suite"),
    records: Annotated[Optional[int], typer.Option("--records", min=1, show_default=False,
                                                   help="Records per produce run (default 1,000,000; "
                                                        "--quick 4,000); 1 KiB runs get a quarter.")] = None,
) -> None:
    """Benchmark kraftlog side by side with the limits of this machine (dd, iperf3, a gRPC-Python
    ceiling), Redis Streams and NATS JetStream. A peer that is not installed is skipped, saying why.
    Exits 1 when a workload failed."""
    if suite not in SUITE_NAMES:
        raise typer.BadParameter(f"{suite!r} is not one of {', '.join(SUITE_NAMES)}", param_hint="--suite")
    if importlib.util.find_spec("bench") is None:
        typer.echo("kraftlog: error: the benchmark suite comes with the source checkout (the bench package "
                   "was not found; run from the checkout or install it with pip install -e .)", err=True)
        raise typer.Exit(1)
    from bench.suite.runner import run_suite

    # SIGTERM unwinds like Ctrl-C, so that every peer and node is still stopped by PID and its dir removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=False) as progress:
        task = progress.add_task("starting", total=None)

        def advance(done: int, total: int, what: str) -> None:
            progress.update(task, completed=done, total=total, description=what)

        results = run_suite(suite, quick, out, records, say=progress.console.print, advance=advance)
    for name, peer in results["peers"].items():
        if "skipped" in peer:
            typer.echo(f"skipped {name}: {peer['skipped']}")
    typer.echo(Path(results["table"]).read_text())
    typer.echo(f"results: {out / 'results.json'}; charts: {', '.join(results['charts'])}")
    if results["errors"]:
        raise typer.Exit(1)
