"""The `kraftlog` command line: the root Typer app and the console script.

This is the composition root of the CLI: every command group is registered
here, and `main` turns user errors into one line on stderr, never a traceback.
"""
from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from partition_log.errors import KafkaError

from .commands import chaos, cluster, console, dump_log, quorum, server, topics

COMMAND_GROUPS = (dump_log, server, quorum, cluster, topics, console, chaos)

app = typer.Typer(
    name="kraftlog",
    no_args_is_help=True,
    add_completion=False,
    # A user error gets one line from `main`; a bug keeps its plain traceback.
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """kraftlog: a replicated, partitioned commit log in the mould of Kafka in KRaft mode."""


for group in COMMAND_GROUPS:
    group.register(app)


def main() -> None:
    try:
        app(prog_name="kraftlog")
    except BrokenPipeError:
        # The reader went away (`kraftlog dump-log ... | head`): not an error
        # worth a message. Point stdout at /dev/null so the final flush at
        # exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except KafkaError as exc:
        _fail(str(exc))  # Kafka's error name first: "CORRUPT_MESSAGE: ..."
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}")


def _fail(message: str) -> NoReturn:
    typer.echo(f"kraftlog: error: {message}", err=True)
    sys.exit(1)
