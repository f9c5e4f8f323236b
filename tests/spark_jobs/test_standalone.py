"""The Spark jobs and the kraftlog source on a Spark standalone cluster
(devcluster.spark_standalone: a master and two workers, each its own JVM
process), submitted with spark-submit: executors in their own JVMs, their
Python workers reading and writing kraftlog topics.

One standalone cluster for the module; the kraftlog cluster is the Spark
tests' shared one (conftest.py). The drivers are spark-submit processes, as
a user runs them: this process may already hold the local[2] SparkSession
of the other Spark tests, and a process has one SparkContext.

`make test` runs the worker-kill test (one driver: the kernels' cache on
the executors, a batch read through a killed worker, a read-and-write job);
the wordcount test, a second driver with a streaming stateful job (minutes
on a busy machine), runs with KRAFTLOG_SPARK_CLUSTER_JOBS=1
(`make spark-cluster-test`).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Iterator, Sequence

import pytest

import spark_jobs
from devcluster.local_processes import wait_until
from devcluster.read_back import read_back
from devcluster.spark_standalone import SparkStandalone
from kafka_protocol.records import Record

from .conftest import bootstrap, make_records, new_topic, produce

JOBS = Path(spark_jobs.__file__).resolve().parent / "__main__.py"
TEST_DRIVER = Path(__file__).resolve().parent / "standalone_job.py"
DRIVER_TIMEOUT_S = 420  # the bound of a driver's run; minutes only on a machine loaded many times over
TASK_NAME = "task-"
ALL_JOBS = os.environ.get("KRAFTLOG_SPARK_CLUSTER_JOBS") == "1"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: `make test` installs a JDK (openjdk-17-jre-headless)")
    with SparkStandalone(tmp_path_factory.mktemp("spark-standalone")).running(timeout=180) as cluster:
        yield cluster


@contextlib.contextmanager
def driver(standalone: SparkStandalone, app: Path, args: Sequence[str], log: Path) -> Iterator[subprocess.Popen]:
    """spark-submit of `app` to the standalone cluster, its output in `log`;
    the driver (spark-submit's JVM and its Python child, one process group)
    killed by PID if it still runs when the block ends."""
    with open(log, "wb") as out:
        process = subprocess.Popen(standalone.submit_command(app, args, short=True), stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, env=standalone.driver_env(), start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def finished(process: subprocess.Popen, log: Path, timeout: float = DRIVER_TIMEOUT_S) -> str:
    """Its output, once it exits 0 (else the end of the output in the failure)."""
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        code = None
    text = log.read_text(errors="replace")
    assert code == 0, f"driver exit {code}:\n" + "\n".join(text.splitlines()[-40:])
    return text


def lines(*texts: str) -> list[Record]:
    return [Record(None, t.encode(), 1_700_000_000_000) for t in texts]


@pytest.mark.skipif(not ALL_JOBS, reason="a second driver (minutes): make spark-cluster-test")
@pytest.mark.timeout(2 * DRIVER_TIMEOUT_S)
def test_wordcount_runs_on_the_standalone_cluster(standalone, cluster, tmp_path) -> None:
    """`spark-submit --master spark://... spark_jobs/__main__.py wordcount`:
    executors read the lines, keep the counts in RocksDB state and write the
    changelog topic; the driver's table is read back from it by executors."""
    source = new_topic(cluster, "standalone-lines", partitions=2)
    produce(cluster, source, 0, lines("the cat and the dog", "The end."))
    produce(cluster, source, 1, lines("a cat's tale"))
    args = ["wordcount", source, "--table", "standalone-counts", "--checkpoint", str(tmp_path / "checkpoint"),
            "--bootstrap", bootstrap(cluster), "--available-now", "--top", "20"]
    log = tmp_path / "driver.log"
    with driver(standalone, JOBS, args, log) as process:
        output = finished(process, log)
    counts = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0].isdigit():
            counts[fields[1]] = int(fields[0])
    assert counts == {"the": 3, "cat": 1, "and": 1, "dog": 1, "end": 1, "a": 1, "cat's": 1, "tale": 1}, output[-3000:]


@pytest.mark.timeout(2 * DRIVER_TIMEOUT_S)
def test_a_killed_workers_task_is_retried_on_the_other_and_every_offset_read_once(
        standalone, cluster, tmp_path) -> None:
    partitions, per_partition = 2, 100
    topic = new_topic(cluster, "standalone-kill", partitions=partitions)
    for p in range(partitions):
        produce(cluster, topic, p, make_records(f"p{p}", per_partition))
    output = new_topic(cluster, "standalone-upper", partitions=partitions)
    work = tmp_path / "driver"
    work.mkdir()
    log = tmp_path / "driver.log"
    with driver(standalone, TEST_DRIVER, [bootstrap(cluster), topic, output, str(work)], log) as process:
        def parked_on_both_workers() -> dict[int, int]:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            where: dict[int, int] = {}  # worker index -> a partition whose first attempt waits there
            for marker in work.glob(f"{TASK_NAME}*"):
                partition, attempt, pid = map(int, marker.name[len(TASK_NAME):].split("-"))
                worker = standalone.worker_of(pid)
                if attempt == 0 and worker is not None:
                    where[worker] = partition
            return where if len(where) == 2 else {}
        parked = wait_until(parked_on_both_workers, DRIVER_TIMEOUT_S, "a task parked on each worker", interval=0.2)
        victim = 0
        standalone.kill_worker(victim)
        (work / "release").touch()
        finished(process, log)
    result = json.loads((work / "result.json").read_text())
    assert result["master"] == standalone.master_url  # spark-submit's, not jobs.session's local[2]

    # every offset once: the killed task's rows came from its retry alone
    rows = sorted(map(tuple, result["rows"]))
    assert rows == [(p, o) for p in range(partitions) for o in range(per_partition)]
    # the killed worker's partition was read again, by a later attempt, on the worker left
    lost = parked[victim]
    retries = [name for name in result["attempts"] if name.startswith(f"{TASK_NAME}{lost}-") and
               int(name.split("-")[2]) > 0]
    assert retries, result["attempts"]
    assert len(standalone.alive_workers()) == 1
    # the executors' Python workers found a writable place for the kernels' cache, and used it
    for report in result["attempts"].values():
        assert report["decoded"] and report["path"] and report["writable"], result["attempts"]
        assert report["hits"] + report["misses"] >= 1, result["attempts"]
    # the sql job's rows, written by the executor left: each source record once, upper-cased
    written = read_back(bootstrap(cluster), output, range(partitions), max_messages=partitions * per_partition,
                        idle_timeout_s=5)
    assert sorted((r.key, r.value) for r in written) == sorted(
        (f"k{i}".encode(), f"P{p}-{i}".encode()) for p in range(partitions) for i in range(per_partition))


def test_a_job_takes_spark_submits_master_unless_given_one(monkeypatch) -> None:
    """jobs.session sets a master only outside spark-submit (whose driver
    inherits the gateway's port), or when --master names one."""
    from spark_jobs.jobs import GATEWAY_PORT_ENV, started_by_spark_submit

    monkeypatch.delenv(GATEWAY_PORT_ENV, raising=False)
    assert not started_by_spark_submit()
    monkeypatch.setenv(GATEWAY_PORT_ENV, "40001")
    assert started_by_spark_submit()
