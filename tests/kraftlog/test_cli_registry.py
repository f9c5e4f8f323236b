"""The CLI imports a command's module only when that command runs: its table
of top-level commands must say exactly what each module registers."""
from __future__ import annotations

import importlib
import subprocess
import sys

import typer
from typer.main import get_command

from kraftlog import cli


def registered_by(module: str) -> set[str]:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """a root, so that one command is still a group"""

    importlib.import_module(module).register(app)
    return set(get_command(app).commands)


def test_the_table_names_every_command_each_module_registers_and_no_other() -> None:
    modules = set(cli.COMMANDS.values())
    table = {(command, module) for command, module in cli.COMMANDS.items()}
    actual = {(command, module) for module in modules for command in registered_by(module)}
    assert table == actual


def test_a_command_loads_its_module_and_help_loads_them_all() -> None:
    assert cli.command_module(["topics", "list"]) == "kraftlog.commands.topics"
    assert cli.command_module(["produce", "t"]) == "kraftlog.commands.console"
    assert cli.command_module(["--help"]) is None and cli.command_module([]) is None
    assert cli.command_module(["no-such-command"]) is None
    # A fresh process: `kraftlog topics --help` never imports the server's config, the console or Spark's CLI.
    probe = ("import sys; sys.argv = ['kraftlog', 'topics', '--help']\n"
             "from kraftlog import cli\n"
             "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('kraftlog_server.server_config', 'kraftlog.commands.console', "
             "'spark_jobs.cli') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    every = subprocess.run([sys.executable, "-m", "kraftlog", "--help"], capture_output=True, text=True, timeout=60)
    assert every.returncode == 0, every.stderr
    for command in cli.COMMANDS:
        assert command in every.stdout
