"""`kraftlog storage format`, like Kafka's `kafka-storage format`: prepare a
node's metadata log directory (meta.properties, bootstrap.checkpoint) before
its first start, with the first super user's SCRAM credentials:

    kraftlog storage format --config node.yaml --add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]'

A dynamic quorum's first controllers (KIP-853) are formatted with the same
`--initial-controllers 1@host1:9093:DIRID1,2@host2:9093:DIRID2,...` (directory
ids from `kraftlog storage random-uuid`), or one with `--standalone`; a
controller that will join later is formatted with neither.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kraftlog_server.server_config import ServerConfig
from security.scram_config import STORAGE_KEYS

from .scram_users import parse_scram_options

storage_app = typer.Typer(help="Prepare a node's metadata log directory (kafka-storage).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(storage_app, name="storage")


@storage_app.command("format")
def format_command(
    config: Annotated[Path, typer.Option(
        "--config", "-c", metavar="FILE", help="The node's YAML file (its metadata.log.dir, node.id, cluster.id).",
        show_default=False)],
    cluster_id: Annotated[Optional[str], typer.Option(
        "--cluster-id", "-t", metavar="ID", help="Must be the config's cluster.id (a check, as kafka-storage's -t).",
        show_default=False)] = None,
    add_scram: Annotated[list[str], typer.Option(
        "--add-scram", "-S", metavar="MECHANISM=[name=USER,password=...]",
        help="A SCRAM credential the first active controller appends: name= and password= (or salt= and "
             "saltedpassword=, base64), iterations= (4096..16384, default 4096). Repeatable.")] = [],
    ignore_formatted: Annotated[bool, typer.Option(
        "--ignore-formatted", "-g", help="Leave a directory formatted for this node as it is, without error.")
    ] = False,
    initial_controllers: Annotated[Optional[str], typer.Option(
        "--initial-controllers", "-I", metavar="ID@HOST:PORT:DIRECTORY_ID,...",
        help="A dynamic quorum's first voters (the same list on each of them); this node takes its "
             "directory id from its entry.", show_default=False)] = None,
    standalone: Annotated[bool, typer.Option(
        "--standalone", "-s", help="A dynamic quorum of this controller alone (others join later).")] = False,
) -> None:
    """Write meta.properties and bootstrap.checkpoint into the node's metadata.log.dir."""
    loaded = ServerConfig.load(config)
    scram = parse_scram_options(add_scram, "--add-scram", STORAGE_KEYS)
    # Imported here: hashing and the storage layer are only needed by this command.
    from kraftlog_server.storage_format import format_storage

    outcome = format_storage(loaded, scram, cluster_id=cluster_id, ignore_formatted=ignore_formatted,
                             initial_controllers=initial_controllers, standalone=standalone)
    if not outcome.formatted:
        print(f"All of the log directories are already formatted ({outcome.directory}).")
        return
    users = f" with {outcome.credentials} SCRAM credential{'s' * (outcome.credentials != 1)}" \
        if outcome.credentials else ""
    voters = "" if outcome.voters is None else \
        f" with initial voters {','.join(str(v.key) for v in outcome.voters)}"
    print(f"Formatting {outcome.directory}{users}{voters} (directory.id {outcome.directory_id}).")


@storage_app.command("random-uuid")
def random_uuid() -> None:
    """Print a new random UUID in Kafka's base64url form (a cluster id or a directory id)."""
    from metadata_quorum.storage.meta_properties import new_directory_id

    print(new_directory_id())
