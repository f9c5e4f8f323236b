"""`kraftlog chaos run`: fault-injection runs against a real cluster, with a
verdict; `kraftlog chaos check`: the linearizability checker on a recorded
history."""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

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
    # chaos is imported here, not at the top: `kraftlog` (any command) must not load it (docs/architecture.md)
    from chaos import lincheck

    if fmt not in lincheck.FORMATS:
        typer.echo(f"kraftlog: error: --format must be history or jepsen-etcd, not {fmt!r}", err=True)
        raise typer.Exit(lincheck.UNREADABLE)
    if not history.is_file():
        typer.echo(f"kraftlog: error: {history}: no such file", err=True)
        raise typer.Exit(lincheck.UNREADABLE)
    if model is None and fmt == "history" and _is_run_history(history):
        # A chaos run's own history: the queue checks and every model, again.
        from chaos.runner import recheck

        summary = recheck(history)
        typer.echo(json.dumps(summary))
        if summary.get("what_went_wrong"):  # stdout is the summary's JSON: the page's path goes to stderr
            typer.echo(f"what went wrong: {history.parent / summary['what_went_wrong']}", err=True)
        verdicts = (summary["linearizable"], summary["offsets_linearizable"], summary["metadata_linearizable"])
        if not summary["valid"] or lincheck.ILLEGAL_RESULT in verdicts:
            raise typer.Exit(lincheck.ILLEGAL)
        raise typer.Exit(lincheck.UNKNOWN if "unknown" in verdicts else lincheck.OK)
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


@chaos_app.command("run")
def run_command(
    scenario: str = typer.Option(..., "--scenario", help="kill-leaders, pause, partition-halves, isolate-leader, "
                                                         "isolate-controller, mixed, transactions, reassignment, "
                                                         "rolling-restart, controller-replacement, unclean-election, "
                                                         "slow-follower, slow-controller, lossy-link, slow-links, "
                                                         "long-partition, clock-skew, disk-eio-fsync, "
                                                         "disk-enospc, disk-torn-write, power-loss(-durable), "
                                                         "last-replica-standing(-durable, -elr), "
                                                         "..., a comma list of them, or all"),
    seed: int = typer.Option(0, "--seed", help="seed of the first run's fault schedule"),
    time_limit: float = typer.Option(60.0, "--time-limit", help="seconds of workload and faults per run"),
    runs: int = typer.Option(1, "--runs", help="runs per scenario, with seeds SEED, SEED+1, ..."),
    seeds: str = typer.Option(None, "--seeds", help="the seeds instead of --seed/--runs: ranges, like 0-4,7"),
    shard: str = typer.Option(None, "--shard", help="I/N: only every N-th run of the slice, from the I-th"),
    resume: bool = typer.Option(False, "--resume", help="reuse every run already in --results with the same "
                                                        "settings, whatever commit it was made on"),
    rerun: bool = typer.Option(False, "--rerun", help="run every run again, even one already made with the same "
                                                      "settings on this commit"),
    results: Path = typer.Option(Path("chaos-results"), "--results", help="a folder per run is made here"),
    unclean: bool = typer.Option(True, "--unclean/--clean",
                                 help="unclean-election: allow the unclean election (default) or not"),
    network: bool = typer.Option(True, "--network/--no-network",
                                 help="put nodes in network namespaces when root (else 127.0.0.1)"),
    secure: bool = typer.Option(False, "--secure", help="TLS with mTLS between nodes, clients over SASL_SSL "
                                                        "as a SCRAM user held to ACLs"),
    client: str = typer.Option("grpc", "--client", help="the workload's producers and readers: grpc (kraftlog's "
                                                        "client) or kafka (librdkafka over the Kafka listener)"),
    as_json: bool = typer.Option(False, "--json", help="one summary object per run per line"),
) -> None:
    """Exit 0 when every run kept its promise (nothing acknowledged lost, a
    linearizable history); an unclean-election run that lost writes kept
    its promise too: that loss is what it shows. A run already in --results,
    made with the same settings on this same unmodified commit, is not run
    again (chaos/matrix.py): a matrix can be run in slices (a comma list of
    scenarios, --seeds, --shard) that accumulate; `python -m chaos.matrix_table
    RESULTS` makes its table."""
    from chaos import matrix
    from chaos.nemesis import TRANSACTIONS
    from chaos.workload import CLIENTS

    known = matrix.all_scenarios()  # the runner's ALL_SCENARIOS; the runner itself loads only to run
    scenarios = list(known) if scenario == "all" else [s.strip() for s in scenario.split(",") if s.strip()]
    if client not in CLIENTS:
        typer.echo(f"kraftlog: error: --client must be one of {', '.join(CLIENTS)}", err=True)
        raise typer.Exit(2)
    if client != "grpc" and secure:
        typer.echo("kraftlog: error: --client kafka runs on a plaintext cluster (its SCRAM user is not wired "
                   "into the librdkafka clients yet)", err=True)
        raise typer.Exit(2)
    if client != "grpc" and scenario == "all":  # its workload is kraftlog's transactional client
        scenarios.remove(TRANSACTIONS)
    elif client != "grpc" and TRANSACTIONS in scenarios:
        typer.echo(f"kraftlog: error: --client kafka is not available for the {TRANSACTIONS} scenario yet", err=True)
        raise typer.Exit(2)
    if secure and scenario == "all":  # its clients have no SCRAM user yet
        scenarios.remove(TRANSACTIONS)
    elif secure and TRANSACTIONS in scenarios:
        typer.echo(f"kraftlog: error: --secure is not available for the {TRANSACTIONS} scenario yet", err=True)
        raise typer.Exit(2)
    unknown = [s for s in scenarios if s not in known]
    if unknown or not scenarios or runs < 1 or time_limit < 10 or (resume and rerun):
        typer.echo(f"kraftlog: error: --scenario must be one of {', '.join(known)}, a comma list of them "
                   "or all; --runs >= 1; --time-limit >= 10; --resume or --rerun, not both", err=True)
        raise typer.Exit(2)
    try:
        chosen = matrix.plan(scenarios, matrix.parse_seeds(seeds) if seeds else range(seed, seed + runs),
                             matrix.parse_shard(shard) if shard else None)
    except ValueError as exc:
        typer.echo(f"kraftlog: error: {exc}", err=True)
        raise typer.Exit(2) from None
    source = matrix.provenance()
    settings = matrix.requested(time_limit, network=network, secure=secure, client=client, unclean=unclean)
    console = Console(stderr=as_json)
    table = Table(title="chaos runs")
    for column in ("scenario", "seed", "testbed", "sends ok/info (txns c/a/?)", "faults", "anomalies", "log", "offsets",
                   "metadata", "verdict"):
        table.add_column(column)
    broken = 0
    for name, n in chosen:
        folder = matrix.folder(results, name, n)
        earlier = matrix.read_summary(folder)
        if not rerun and matrix.reusable(earlier, settings, source, resume=resume):
            summary = earlier
            console.print(f"[bold]{name}[/] seed {n}: already run on {(summary['run'].get('commit') or '?')[:10]} "
                          f"({summary['run']['finished']}) -> {folder}")
        else:
            if folder.exists():  # an earlier run's files (other settings or commit, or it died): replaced whole
                console.print(f"  replacing the earlier run in {folder}")
                shutil.rmtree(folder)
            console.print(f"[bold]{name}[/] seed {n}: running ({time_limit:g}s{', secured' if secure else ''}"
                          f"{', ' + client + ' clients' if client != 'grpc' else ''}) -> {folder}")
            from chaos.runner import RunSettings, run

            started = time.time()
            summary = run(RunSettings(name, n, time_limit, folder, unclean=unclean, network=network,
                                      secure=secure, client=client)).summary
            summary = matrix.stamp(folder, summary, settings=settings, source=source, started=started,
                                   finished=time.time(), load=matrix.load_average())
        anomalies = {k: v for k, v in summary["anomalies"].items() if v and k != "lost-unacked-ok"}
        verdicts = [_checked(summary, model) for model in matrix.MODELS]
        kept, verdict = matrix.verdict(summary)
        broken += not kept
        if as_json:
            typer.echo(json.dumps({**summary, "results": str(folder), "verdict": verdict}))
        table.add_row(name, str(n), "yes" if summary["testbed"] else "no",
                      _sends(summary), str(summary["faults"]),
                      ", ".join(f"{k} {v}" for k, v in anomalies.items()) or "none",
                      *verdicts, verdict)
        for note in summary["notes"]:
            console.print(f"  note: {note}")
        if summary.get("what_went_wrong"):
            console.print(f"  what went wrong: {folder / summary['what_went_wrong']}")
    console.print(table)
    raise typer.Exit(1 if broken else 0)


def _checked(summary: dict, model: str) -> str:
    """A model's verdict, with the operations of unknown outcome the checker pruned
    before its search when it pruned any (a reader then knows why a history full
    of timeouts was decided so fast)."""
    from chaos import matrix

    pruned = sum((summary.get("checker_pruned") or {}).get(model, {}).values())
    return f"{summary[matrix.VERDICT_KEYS[model]]}" + (f" ({pruned} pruned)" if pruned else "")


def _sends(summary: dict) -> str:
    """Sends acknowledged/unknown; for the transactions scenario, transactions committed/aborted/unknown."""
    if "transactions" in summary:
        t = summary["transactions"]
        return f"txns {t['committed']}/{t['aborted']}/{t['unknown']}"
    return f"{summary['sends']['ok']}/{summary['sends']['info']}"


def _is_run_history(path: Path) -> bool:
    """Whether the file is a `chaos run` history (it has polls or final reads)."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for _, line in zip(range(100_000), lines):
            if '"f":"poll"' in line or '"f":"final-read"' in line or '"f": "poll"' in line:
                return True
    return False


def register(app: typer.Typer) -> None:
    app.add_typer(chaos_app, name="chaos")
