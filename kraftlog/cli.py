"""The `kraftlog` command line: the root Typer app and the console script.

This is the composition root of the CLI: every command group is registered
here, and `main` turns user errors into one line on stderr, never a traceback.
"""
from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

try:  # typer vendors Click from 0.2x on; before, it used Click itself
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - older typer
    from click.exceptions import NoArgsIsHelpError, UsageError  # type: ignore[no-redef]

from kafka_protocol.errors import KafkaError
from spark_jobs import cli as spark  # no pyspark import until a job runs

from .commands import (
    acls, bench, certs, chaos, cluster, configs, console, demo, dump_log, elections, groups, perf, quorum, server,
    storage, topics, transactions,
)

COMMAND_GROUPS = (dump_log, server, storage, quorum, cluster, topics, configs, acls, elections, groups, transactions,
                  console, perf, chaos, bench, certs, demo, spark)

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
        # Not standalone: usage errors come back here to be told in one line,
        # rather than as Click's usage block.
        code = app(prog_name="kraftlog", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()  # `kraftlog topics` alone: the group's help, as standalone Click would
        sys.exit(exc.exit_code)
    except UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else "kraftlog"
        _fail(f"{exc.format_message()} (see `{command} --help`)", exit_code=exc.exit_code)
    except typer.Abort:
        _fail("aborted", exit_code=130)
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
    if isinstance(code, int) and code:
        sys.exit(code)


def _fail(message: str, exit_code: int = 1) -> NoReturn:
    typer.echo(f"kraftlog: error: {message}", err=True)
    sys.exit(exit_code)
