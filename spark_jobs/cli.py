"""`kraftlog spark JOB`: the Spark jobs of spark_jobs.jobs from the command line
(also `python -m spark_jobs JOB`, and `spark-submit spark_jobs/__main__.py JOB`)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from client.cluster import bootstrap_from
from kafka_protocol.properties_text import read_properties
from security.client_security import CLIENT_SECURITY_KEYS

from .options import parse_security

app = typer.Typer(name="spark", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Stream processing on Spark over kraftlog topics (local[2] unless --master, or "
                       "spark-submit's --master under spark-submit).")

Bootstrap = Annotated[Optional[str], typer.Option("--bootstrap", metavar="HOST:PORT[,...]",
                                                  help="Brokers (default: $KRAFTLOG_BOOTSTRAP).")]
CommandConfig = Annotated[Optional[Path], typer.Option(
    "--command-config", metavar="FILE", show_default=False,
    help="Client settings in a Java properties file, with Kafka's names: security.protocol, ssl.*, sasl.* "
         "(the job's kraftlog.security.protocol, ... options).")]
Master = Annotated[Optional[str], typer.Option("--master", show_default=False, help=(
    "Spark master URL, e.g. spark://HOST:7077 (default: spark-submit's --master when run by spark-submit, "
    "else local[2])."))]
AvailableNow = Annotated[bool, typer.Option("--available-now", help="Process what is there now, then stop "
                                                                    "(Trigger.AvailableNow).")]
Timeout = Annotated[Optional[float], typer.Option("--timeout", metavar="SECONDS", help="Stop after this long.")]


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="spark")


def client_settings(command_config: Optional[Path]) -> dict[str, str]:
    """The --command-config file's security.protocol, ssl.* and sasl.* ({} without one), checked
    before Spark starts; any other key is named in a warning, as Kafka's tools do. Errors name the
    file and a line or a setting, never a value."""
    if command_config is None:
        return {}
    settings = read_properties(command_config, f"--command-config {command_config}")
    for key in sorted(set(settings) - CLIENT_SECURITY_KEYS):
        typer.echo(f"kraftlog spark: warning: --command-config {command_config}: {key} is not used by the "
                   "Spark jobs", err=True)
    security = {key: value for key, value in settings.items() if key in CLIENT_SECURITY_KEYS}
    parse_security(security)
    return security


def check_topics(servers: str, settings: dict[str, str], topics: list[str]) -> None:
    """Before Spark starts (a driver JVM takes seconds to launch): the brokers
    answer and the input topics exist, so a wrong --bootstrap or topic name
    fails at once, with the error the job's reader would give later."""
    from .options import Subscription
    from .topic_offsets import open_cluster, subscribed_partitions

    with open_cluster(servers, parse_security(settings)) as cluster:
        subscribed_partitions(cluster, Subscription("subscribe", topics=tuple(dict.fromkeys(topics))))


def one_line(exc: BaseException) -> str:
    """The error as one line: Spark reports a data source's exception inside
    its own message, with the Python traceback; the last `SomeError: text`
    line of it is ours (Kafka's error name first)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        found = re.match(r"^[\w.]*(?:Error|Exception): (.+)$", line)
        if found:
            return found.group(1)
    return lines[0] if lines else repr(exc)


@app.command("wordcount")
def wordcount_command(
    source: Annotated[str, typer.Argument(help="Topic of text lines.")],
    table: Annotated[str, typer.Option("--table", help="Compacted topic of the counts (created if missing).")],
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="Spark checkpoint directory.")],
    bootstrap: Bootstrap = None, command_config: CommandConfig = None, master: Master = None,
    available_now: AvailableNow = False, timeout: Timeout = None,
    top: Annotated[int, typer.Option("--top", help="Then print the N most frequent words, rebuilt from the "
                                                   "table topic.")] = 10,
) -> None:
    """Streaming word count (RocksDB state) into a compacted topic; then the table rebuilt from it."""
    from .jobs import session, word_table, wordcount

    servers, settings = bootstrap_from(bootstrap), client_settings(command_config)
    check_topics(servers, settings, [source])
    spark = session("kraftlog-wordcount", master)
    wordcount(spark, servers, source, table, checkpoint, available_now=available_now, timeout_s=timeout,
              settings=settings)
    for row in word_table(spark, servers, table, settings).limit(top).collect():
        typer.echo(f"{row['count']:>10}  {row['word']}")


@app.command("enrich")
def enrich_command(
    events: Annotated[str, typer.Argument(help="Topic of keyed events.")],
    reference: Annotated[str, typer.Option("--reference", help="Compacted topic of reference data by key.")],
    output: Annotated[str, typer.Option("--output", help="Topic of the enriched events (created if missing).")],
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="Spark checkpoint directory.")],
    bootstrap: Bootstrap = None, command_config: CommandConfig = None, master: Master = None,
    available_now: AvailableNow = False, timeout: Timeout = None,
) -> None:
    """Stream-table join: events joined by key with the latest reference value, to an output topic."""
    from .jobs import enrich, session

    servers, settings = bootstrap_from(bootstrap), client_settings(command_config)
    check_topics(servers, settings, [events, reference])
    enrich(session("kraftlog-enrich", master), servers, events, reference, output, checkpoint,
           available_now=available_now, timeout_s=timeout, settings=settings)


@app.command("sql")
def sql_command(
    statement: Annotated[str, typer.Argument(help="Spark SQL over the topics' views.")],
    topic: Annotated[list[str], typer.Option("--topic", metavar="NAME[=VIEW]", help="A topic to query (view "
                                             "name: the topic's, - and . as _). Repeatable.")],
    stream: Annotated[bool, typer.Option("--stream", help="Run continuously over the topics as streams.")] = False,
    output: Annotated[Optional[str], typer.Option("--output", help="With --stream: write to this topic (needs a "
                                                                   "value column) instead of the console.")] = None,
    checkpoint: Annotated[Optional[str], typer.Option("--checkpoint", help="With --stream: checkpoint "
                                                                           "directory.")] = None,
    bootstrap: Bootstrap = None, command_config: CommandConfig = None, master: Master = None,
    available_now: AvailableNow = False, timeout: Timeout = None,
    json_out: Annotated[bool, typer.Option("--json", help="Batch: one JSON object a row.")] = False,
) -> None:
    """SQL over topics: views of key/value (strings), topic, partition, offset, timestamp."""
    from .jobs import session, sql

    servers, settings = bootstrap_from(bootstrap), client_settings(command_config)
    check_topics(servers, settings, [spec.partition("=")[0] for spec in topic])
    result = sql(session("kraftlog-sql", master), servers, statement, topic, stream=stream, output=output,
                 checkpoint=checkpoint, available_now=available_now, timeout_s=timeout, settings=settings)
    if result is not None:
        if json_out:
            for line in result.toJSON().collect():
                typer.echo(line)
        else:
            result.show(truncate=False)
