"""The `kraftlog` command line: the root Typer app and the console script.

This is the composition root of the CLI: every command group is registered
here, and `main` turns user errors into one line on stderr, never a traceback.

A command's module is imported only when that command runs: `kraftlog
topics list` loads the topics command and the client, not the server's
config, the console, Spark's job planner or rich's markdown (importing every
module took about 1.4 s a call; scripts and the tests call the CLI hundreds
of times). `COMMANDS` names the module of each top-level command;
`kraftlog --help`, an unknown command or no command registers them all.
tests/kraftlog/test_cli_registry.py holds the table to what the modules
register.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import NoReturn, Optional, Sequence

import typer

try:  # typer vendors Click from 0.2x on; before, it used Click itself
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - older typer
    from click.exceptions import NoArgsIsHelpError, UsageError  # type: ignore[no-redef]

from kafka_protocol.errors import KafkaError

# Top-level command -> the module whose `register(app)` adds it, in help order.
COMMANDS = {
    "dump-log": "kraftlog.commands.dump_log",
    "server": "kraftlog.commands.server",
    "storage": "kraftlog.commands.storage",
    "quorum": "kraftlog.commands.quorum",
    "cluster": "kraftlog.commands.cluster",
    "features": "kraftlog.commands.features",
    "health": "kraftlog.commands.health",
    "topics": "kraftlog.commands.topics",
    "configs": "kraftlog.commands.configs",
    "acls": "kraftlog.commands.acls",
    "leader-election": "kraftlog.commands.elections",
    "reassign-partitions": "kraftlog.commands.reassign_partitions",
    "groups": "kraftlog.commands.groups",
    "transactions": "kraftlog.commands.transactions",
    "consume": "kraftlog.commands.console",
    "produce": "kraftlog.commands.console",
    "perf": "kraftlog.commands.perf",
    "chaos": "kraftlog.commands.chaos",
    "bench": "kraftlog.commands.bench",
    "certs": "kraftlog.commands.certs",
    "demo": "kraftlog.commands.demo",
    "spark": "spark_jobs.cli",  # no pyspark import until a job runs
}

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


_registered: set[str] = set()


def register(modules: Sequence[str]) -> typer.Typer:
    """Add these command modules to the app (each once)."""
    for name in modules:
        if name not in _registered:
            importlib.import_module(name).register(app)
            _registered.add(name)
    return app


def register_all() -> typer.Typer:
    return register(list(dict.fromkeys(COMMANDS.values())))


def command_module(argv: Sequence[str]) -> Optional[str]:
    """The module of the command `argv` names, None when it names none
    (help, an option first, an unknown command: then every command is needed)."""
    first = argv[0] if argv else ""
    return COMMANDS.get(first)


def main() -> None:
    module = command_module(sys.argv[1:])
    if module is not None:
        register([module])
    else:
        register_all()
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
