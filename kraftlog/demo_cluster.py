"""The main demo: Kafka in KRaft mode from deploy/local.yaml, through a broker failure.

Starts 3 controllers and 3 brokers (the launcher behind `kraftlog cluster
up`) in a temp dir, creates a topic (6 partitions, RF 3, min ISR 2),
produces 100,000 records with acks=all, kills one broker with SIGKILL
part way, shows leaders moving and ISRs shrinking, keeps producing,
restarts the broker and shows it rejoin every ISR, then consumes
everything and checks that every acknowledged record arrived exactly once
and in order per partition. Last, Spark's streaming word count
(`kraftlog spark wordcount`, spark_jobs/) runs over the records - each is
a numbered line of a few words - and shows the most frequent words, read
back from the compacted table topic it wrote.

`secure`: the same on a secured cluster (demo_secure.py), every client a
SCRAM user over SASL_SSL held to its ACLs, the Spark word count too
(`--command-config`).
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from client.cluster import Cluster
from client.errors import KafkaError
from client.producer import Producer
from client.topics import create_topic, describe_topics

from devcluster import launcher
from devcluster.read_back import read_back

from . import demo_secure

CLUSTER_FILE = Path(__file__).resolve().parent.parent / "deploy" / "local.yaml"
TOPIC = "demo-events"
PARTITIONS = 6
CONSUME_IDLE_S = 15  # reading back ends once nothing new came for this long
RECORDS = 100_000
CHUNK = 500  # records produced, then flushed, between two looks at the cluster
KILL_AT, RESTART_AT = 30_000, 60_000
# The words of the records' lines, drawn with falling weights so the word count has a clear top.
WORDS = ("log", "broker", "leader", "replica", "partition", "offset", "epoch", "quorum", "controller",
         "follower", "batch", "segment", "raft", "kafka", "spark")
WORD_COUNT_TABLE = "demo-word-counts"
SPARK_TIMEOUT_S = 600


def record_lines(first: int, count: int) -> list[str]:
    """Records first..first+count-1: "<n> word word word", n unique (6 digits), the same on every run."""
    lines = []
    for n in range(first, first + count):
        words = random.Random(n).choices(WORDS, weights=range(len(WORDS), 0, -1), k=3)
        lines.append(f"{n:06d} {' '.join(words)}")
    return lines


def partition_table(cluster: Cluster, title: str) -> Table:
    table = Table("Partition", "Leader", "LeaderEpoch", "Replicas", "Isr", title=title)
    for p in describe_topics(cluster, [TOPIC])[0]["partitions"]:
        table.add_row(str(p["partition"]), "none" if p["leader"] < 0 else str(p["leader"]), str(p["leader_epoch"]),
                      ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])))
    return table


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(0.5)


def every_partition_led(cluster: Cluster, isr_has: int | None = None, isr_lacks: int | None = None) -> bool:
    """Every partition has a leader (and its ISR holds / lacks the given broker), as the brokers see it."""
    try:
        partitions = describe_topics(cluster, [TOPIC])[0]["partitions"]
    except KafkaError:
        return False  # the topic is not in this broker's image yet
    return all(p["leader"] >= 0 and (isr_has is None or isr_has in p["isr"])
               and (isr_lacks is None or isr_lacks not in p["isr"]) for p in partitions)


def main(console: Console, secure: bool = False) -> int:
    with tempfile.TemporaryDirectory(prefix="kraftlog-demo-cluster-") as workdir:
        admin_password = None
        if secure:
            plans, admin_password = demo_secure.secured_plans(CLUSTER_FILE, Path(workdir))
        else:
            plans = launcher.plan_cluster(CLUSTER_FILE, Path(workdir))
        try:
            return run(console, plans, admin_password)
        finally:
            console.rule("kraftlog cluster down")
            for node, outcome in launcher.stop_nodes(plans).items():
                console.print(f"node {node}: {outcome}")


def run(console: Console, plans: tuple[launcher.NodePlan, ...], admin_password: str | None = None) -> int:
    """`admin_password`: the plans are secured, with this bootstrapped admin."""
    console.rule(f"[bold]kraftlog cluster up --config {CLUSTER_FILE.relative_to(CLUSTER_FILE.parent.parent)}"
                 + (" (secured)" if admin_password else ""))
    for plan in plans:
        launcher.start_node(plan)
    info = launcher.wait_for_leader(plans, 60)
    brokers = launcher.wait_for_brokers(plans, 60)
    console.print(f"controller quorum leader: node {info['leader_id']}; brokers unfenced: {brokers}")
    by_id = {plan.node_id: plan for plan in plans}

    access = (demo_secure.demo_user_access(console, plans, admin_password, (TOPIC, WORD_COUNT_TABLE))
              if admin_password else demo_secure.plaintext_access(plans))
    bootstrap = access.bootstrap
    with Cluster(bootstrap, access.security) as cluster:
        create_topic(cluster, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        wait_for(lambda: every_partition_led(cluster), 30, "every partition has a leader")
        console.print(partition_table(cluster, f"{TOPIC}: 6 partitions, RF 3, min.insync.replicas=2"))

        acknowledged: set[str] = set()
        failed = 0
        victim = describe_topics(cluster, [TOPIC])[0]["partitions"][0]["leader"]
        columns = (TextColumn("producing (acks=all)"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        started = time.monotonic()
        # Idempotent (the default), so a batch retried through the failover is written once.
        producer = Producer({**access.client_config, "bootstrap.servers": bootstrap, "acks": "all",
                             "delivery.timeout.ms": 60_000})
        with producer, Progress(*columns, console=console) as progress:
            bar = progress.add_task("produce", total=RECORDS)
            for first in range(0, RECORDS, CHUNK):
                if first == KILL_AT:
                    os.kill(launcher.read_pid(by_id[victim]) or 0, signal.SIGKILL)
                    progress.console.print(f"[red]kill -9 of broker {victim}[/] (leader of partition 0)")
                if first == RESTART_AT:
                    progress.console.print(partition_table(
                        cluster, f"leaders moved off broker {victim}, ISRs shrank without it"))
                    launcher.start_node(by_id[victim])
                    progress.console.print(f"[green]broker {victim} restarted[/]")
                # Keyless records: the producer spreads their batches over the partitions (sticky).
                sent = [(line, producer.produce(TOPIC, line.encode())) for line in record_lines(first, CHUNK)]
                producer.flush()
                for line, future in sent:
                    if future.exception() is None:
                        acknowledged.add(line)
                    else:
                        failed += 1
                progress.advance(bar, CHUNK)
        produce_s = time.monotonic() - started
        console.print(f"{len(acknowledged):,} records acknowledged, {failed:,} not, in {produce_s:.1f}s "
                      f"({len(acknowledged) / produce_s:,.0f} records/s)")

        wait_for(lambda: every_partition_led(cluster, isr_has=victim), 120, f"broker {victim} rejoins every ISR")
        console.print(partition_table(cluster, f"broker {victim} rejoined every ISR"))

    seen: dict[str, int] = defaultdict(int)
    last_in_partition: dict[int, int] = {}
    out_of_order = 0
    # Up to all that was sent (a record that failed may still have been written).
    records = read_back(bootstrap, TOPIC, range(PARTITIONS), max_messages=len(acknowledged) + failed,
                        idle_timeout_s=CONSUME_IDLE_S, settings=access.client_config)
    for record in records:
        value = (record.value or b"").decode()
        seen[value] += 1
        n = int(value.split()[0])
        if n < last_in_partition.get(record.partition, -1):
            out_of_order += 1
        last_in_partition[record.partition] = n
    missing = [v for v in acknowledged if v not in seen]
    duplicates = sum(1 for c in seen.values() if c > 1)
    table = Table("check", "result", title="summary")
    table.add_row("acknowledged records", f"{len(acknowledged):,}")
    table.add_row("consumed records", f"{len(records):,}")
    table.add_row("acknowledged but missing", str(len(missing)))
    table.add_row("delivered more than once", str(duplicates))
    table.add_row("out of order within a partition", str(out_of_order))
    console.print(table)
    ok = not missing and not duplicates and not out_of_order
    console.print("[bold green]every acknowledged record arrived once, in order per partition[/]" if ok
                  else "[bold red]the checks failed[/]")
    workdir = plans[0].home.parent
    command_config = demo_secure.write_command_config(access, workdir / "demo-user.properties")
    counted = word_count(console, bootstrap, workdir / "spark-checkpoint", command_config)
    return 0 if ok and counted else 1


def word_count(console: Console, bootstrap: str, checkpoint: Path, command_config: Path | None = None) -> bool:
    """Spark's streaming word count over the demo's topic (a subprocess, as a user runs it);
    `command_config`: the secured demo user's client settings file."""
    login = ["--command-config", str(command_config)] if command_config else []
    console.rule(f"[bold]kraftlog spark wordcount {TOPIC} --table {WORD_COUNT_TABLE} --available-now"
                 + (f" --command-config {command_config.name}" if command_config else ""))
    console.print("Spark (local[2]) reads every record through the kraftlog data source, counts words with "
                  "RocksDB state, writes the counts to a compacted topic, and reads that table back:")
    command = [sys.executable, "-m", "spark_jobs", "wordcount", TOPIC, "--table", WORD_COUNT_TABLE,
               "--checkpoint", str(checkpoint), "--available-now", "--top", "10", "--bootstrap", bootstrap, *login]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=SPARK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        console.print(f"[bold red]the word count did not finish within {SPARK_TIMEOUT_S}s[/]")
        return False
    if done.returncode != 0:
        console.print(f"[bold red]the word count failed[/] (exit {done.returncode}):")
        console.print("\n".join(done.stderr.strip().splitlines()[-15:]), markup=False)
        return False
    table = Table("count", "word", title=f"top words, rebuilt from {WORD_COUNT_TABLE}")
    for line in done.stdout.splitlines():
        count, _, word = line.strip().partition("  ")
        if count.isdigit():
            table.add_row(count, word.strip())
    console.print(table)
    return True
