"""`kraftlog transactions list|describe|describe-producers|abort|find-hanging|copy`,
like Kafka's kafka-transactions.sh (client/transaction_admin.py does the
work), plus `copy`, the consume-transform-produce example (transactions_copy.py)."""
from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from client.transaction_admin import (DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN, abort_transaction, describe_producers,
                                      describe_transaction, find_hanging, list_transactions)
from security.client_security import CLIENT_SECURITY_KEYS

from .common import BootstrapOption, ClusterTarget, CommandConfigOption, JsonOption, output_console, print_json
from .transactions_copy import CopyStats, copy_exactly_once

transactions_app = typer.Typer(help="List, describe and abort transactions; find hanging ones; copy a topic "
                               "exactly once.", no_args_is_help=True)

TopicOption = Annotated[str, typer.Option("--topic", help="The topic.", show_default=False)]
PartitionOption = Annotated[int, typer.Option("--partition", min=0, help="The partition.", show_default=False)]


def register(app: typer.Typer) -> None:
    app.add_typer(transactions_app, name="transactions")


@transactions_app.command("list")
def list_command(as_json: JsonOption = False, bootstrap: BootstrapOption = None,
                 command_config: CommandConfigOption = None) -> None:
    """Every transactional id, its producer id, state and coordinator."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    found = list_transactions(servers, security=security)
    if as_json:
        print_json(found)
        return
    table = Table("TransactionalId", "Coordinator", "ProducerId", "TransactionState", box=box.SIMPLE_HEAD)
    for t in found:
        table.add_row(t["transactional_id"], str(t["coordinator"]), str(t["producer_id"]), t["state"])
    output_console().print(table)


@transactions_app.command("describe")
def describe_command(
    transactional_id: Annotated[str, typer.Option("--transactional-id", help="The transactional id.",
                                                  show_default=False)],
    as_json: JsonOption = False, bootstrap: BootstrapOption = None, command_config: CommandConfigOption = None,
) -> None:
    """The id's state at its coordinator: producer, epoch, timeout, start time and partitions."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    t = describe_transaction(servers, transactional_id, security=security)
    if as_json:
        print_json(t)
        return
    table = Table("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                  "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
                  box=box.SIMPLE_HEAD)
    start = t["start_time_ms"]
    duration = str(_now_ms() - start) if start >= 0 else "None"
    table.add_row(str(t["coordinator"]), t["transactional_id"], str(t["producer_id"]), str(t["producer_epoch"]),
                  t["state"], str(t["timeout_ms"]), str(start) if start >= 0 else "None", duration,
                  ",".join(f"{topic}-{p}" for topic, p in t["partitions"]))
    output_console().print(table)


@transactions_app.command("describe-producers")
def describe_producers_command(topic: TopicOption, partition: PartitionOption, as_json: JsonOption = False,
                               bootstrap: BootstrapOption = None, command_config: CommandConfigOption = None) -> None:
    """The producers the partition's leader tracks, with the first offset of each open transaction."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    producers = describe_producers(servers, topic, partition, security=security)
    if as_json:
        print_json(producers)
        return
    table = Table("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                  "CurrentTransactionStartOffset", box=box.SIMPLE_HEAD)
    for p in producers:
        start = p["current_txn_start_offset"]
        table.add_row(str(p["producer_id"]), str(p["producer_epoch"]), str(p["coordinator_epoch"]),
                      str(p["last_sequence"]), _time(p["last_timestamp"]), str(start) if start >= 0 else "None")
    output_console().print(table)


@transactions_app.command("abort")
def abort_command(
    topic: TopicOption, partition: PartitionOption,
    start_offset: Annotated[int, typer.Option("--start-offset", min=0, show_default=False,
                                              help="The first offset of the open transaction (see "
                                                   "describe-producers or find-hanging).")],
    as_json: JsonOption = False, bootstrap: BootstrapOption = None, command_config: CommandConfigOption = None,
) -> None:
    """Abort the transaction open at a partition since --start-offset (a hanging one).

    Writes an ABORT marker for that transaction's producer at the partition's
    leader (WriteTxnMarkers), which needs ClusterAction on the cluster: run it
    as a node's principal or a super user. Use it only for a transaction its
    coordinator has lost (find-hanging): the producer's records there are dropped
    for read_committed consumers."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    aborted = abort_transaction(servers, topic, partition, start_offset, security=security)
    if as_json:
        print_json(aborted)
        return
    typer.echo(f"Aborted the transaction of producer {aborted['producer_id']} (epoch {aborted['producer_epoch']}) "
               f"open at {topic}-{partition} since offset {start_offset}.")


@transactions_app.command("find-hanging")
def find_hanging_command(
    broker_id: Annotated[Optional[int], typer.Option("--broker-id", min=0, show_default=False,
                                                     help="Only the partitions this broker leads.")] = None,
    max_transaction_timeout: Annotated[int, typer.Option(
        "--max-transaction-timeout", min=1, metavar="MINUTES",
        help="A transaction open longer than this hangs (the cluster's transaction.max.timeout.ms).")]
    = DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
    as_json: JsonOption = False, bootstrap: BootstrapOption = None, command_config: CommandConfigOption = None,
) -> None:
    """Transactions open at partitions that their coordinator does not have ongoing there, or open too long."""
    servers, security = ClusterTarget(bootstrap, command_config).resolve()
    hanging = find_hanging(servers, broker_id=broker_id, max_transaction_timeout_min=max_transaction_timeout,
                           security=security)
    if as_json:
        print_json(hanging)
        return
    table = Table("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                  "LastTimestamp", "Duration(min)", "Why", box=box.SIMPLE_HEAD)
    for h in hanging:
        table.add_row(h["topic"], str(h["partition"]), str(h["producer_id"]), str(h["producer_epoch"]),
                      str(h["coordinator_epoch"]), str(h["current_txn_start_offset"]), _time(h["last_timestamp"]),
                      str(h["age_ms"] // 60_000) if h["age_ms"] >= 0 else "-", h["reason"])
    output_console().print(table)
    if not hanging:
        typer.echo("No hanging transactions found.")


@transactions_app.command("copy")
def copy_command(
    source: Annotated[str, typer.Option("--from", help="The topic to read (read_committed).", show_default=False)],
    destination: Annotated[str, typer.Option("--to", help="The topic to write.", show_default=False)],
    group: Annotated[str, typer.Option("--group", help="The consumer group whose offsets commit with each "
                                       "transaction.", show_default=False)],
    transactional_id: Annotated[str, typer.Option("--transactional-id", show_default=False,
                                                  help="The producer's transactional.id; a copier started again "
                                                       "with it fences the old one.")],
    max_records: Annotated[Optional[int], typer.Option("--max-records", min=1, show_default=False,
                                                       help="Stop after copying this many (default: run until "
                                                            "stopped).")] = None,
    idle_exit: Annotated[Optional[float], typer.Option("--idle-exit", min=0.1, metavar="SECONDS",
                                                       show_default=False,
                                                       help="Stop once nothing came for this long.")] = None,
    bootstrap: BootstrapOption = None, command_config: CommandConfigOption = None,
) -> None:
    """Copy a topic to another exactly once (consume-transform-produce).

    One transaction per poll, holding the copies and the group's offsets; run it
    again with the same --group and --transactional-id after a crash."""
    if source == destination:
        raise typer.BadParameter("--from and --to must be different topics", param_hint="--to")
    target = ClusterTarget(bootstrap, command_config)
    settings = target.settings()
    client = {"bootstrap.servers": target.servers(settings),
              **{k: v for k, v in settings.items() if k in CLIENT_SECURITY_KEYS}}
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def committed(stats: CopyStats) -> None:
        typer.echo(f"committed transaction {stats.transactions}: {stats.copied} records copied", err=True)

    stats = copy_exactly_once(client, source, destination, group, transactional_id, max_records=max_records,
                              idle_exit_s=idle_exit, on_commit=committed)
    typer.echo(f"Copied {stats.copied} records from {source} to {destination} in {stats.transactions} "
               f"transactions ({stats.aborted} aborted).")


def _now_ms() -> int:
    return int(datetime.now(timezone.utc).timestamp() * 1000)


def _time(ms: Any) -> str:
    if not isinstance(ms, int) or ms <= 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="seconds")
