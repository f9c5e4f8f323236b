"""A Spark standalone cluster on this machine, from PySpark's own distribution.

The pip package `pyspark` is a whole Spark: its `bin/spark-class` runs the
standalone master and workers (its `sbin/` lacks the start-master.sh family,
and those daemonize anyway). `SparkStandalone` starts one master and N
workers as separate processes on 127.0.0.1, on ports free at the time, each
worker with its own work directory under `directory` (where it starts its
executors' JVMs, which start their Python workers). A worker has 1 core and
1 GiB by default, so two of them run two tasks at once, as `local[2]` does.

Each process is the leader of its own process group (spark-class execs the
JVM, so the PID we hold is the JVM's; an executor is the worker's child in
the same group), and is stopped by that id: SIGTERM to the group, SIGKILL
after a grace period, in `close()` (use `running()`), also on failure.
`kill_worker(i)` is a lost machine: SIGKILL to the worker's group, its
executor with it. An executor's Python daemon puts itself in a group of its
own, and exits when its executor's pipe closes.

A driver reaches the cluster at `master_url` (spark://127.0.0.1:PORT);
`submit_command()` is a spark-submit command line for it, `driver_env()`
the environment a driver on this machine needs.

    python -m devcluster.spark_standalone [--workers 2] [--dir DIR]

runs one in the foreground (`make spark-cluster`) until Ctrl-C or SIGTERM.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

from .local_processes import free_ports, wait_until

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
ALIVE = "ALIVE"
# The master and workers only route messages: the JVM's quick compiler and
# serial GC start them in less CPU (the machine's cores go to executors).
# The master's REST submission server is off: it takes a fixed port (6066).
DAEMON_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
MASTER_OPTS = "-Dspark.master.rest.enabled=false"


def spark_home() -> Path:
    """The pyspark package's directory: a Spark distribution (bin/, jars/)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyspark is not installed (pip install -e '.[spark]')")
    return Path(next(iter(spec.submodule_search_locations)))


def spark_env(base: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The environment of every Spark process here: this Spark, bound to
    127.0.0.1 (Spark otherwise resolves the host name and may bind a public
    address), Python workers on this interpreter."""
    env = dict(os.environ if base is None else base)
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_LOCAL_HOSTNAME=HOST,
               PYSPARK_PYTHON=env.get("PYSPARK_PYTHON", sys.executable),
               PYSPARK_DRIVER_PYTHON=env.get("PYSPARK_DRIVER_PYTHON", sys.executable))
    return env


def daemon_env() -> dict[str, str]:
    return {**spark_env(), "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTS, "SPARK_MASTER_OPTS": MASTER_OPTS}


@dataclass
class SparkProcess:
    name: str
    command: list[str]
    log_path: Path
    pid: Optional[int] = None


class SparkStandalone:
    # How long close() waits after SIGTERM before SIGKILL.
    stop_timeout_s = 15.0

    def __init__(self, directory: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 + 2 * workers)
        self.master_port, self.master_web_port = ports[0], ports[1]
        spark_class = str(spark_home() / "bin" / "spark-class")
        self.master = SparkProcess("master", [
            spark_class, MASTER_CLASS, "--host", HOST, "--port", str(self.master_port),
            "--webui-port", str(self.master_web_port)], self.directory / "master.log")
        self.workers = []
        for i in range(workers):
            work_dir = self.directory / f"worker-{i}"
            work_dir.mkdir(exist_ok=True)
            self.workers.append(SparkProcess(f"worker-{i}", [
                spark_class, WORKER_CLASS, "--host", HOST, "--port", str(ports[2 + 2 * i]),
                "--webui-port", str(ports[3 + 2 * i]), "--cores", str(cores), "--memory", memory,
                "--work-dir", str(work_dir), self.master_url], work_dir / "worker.log"))

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def web_url(self) -> str:
        return f"http://{HOST}:{self.master_web_port}"

    # -- starting -------------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> None:
        """The master, then every worker at once; returns when the master
        counts them all alive."""
        self._spawn(self.master)

        def answers() -> bool:
            self._check_running(self.master)
            return self.state() is not None
        wait_until(answers, timeout, f"Spark master at {self.web_url}", interval=0.2)
        for worker in self.workers:
            self._spawn(worker)
        self.wait_for_workers(len(self.workers), timeout)

    def start_worker(self, index: int, timeout: float = 60.0) -> None:
        """(Re)start worker `index`; returns when the master counts it alive."""
        self._spawn(self.workers[index])
        self.wait_for_workers(len(self.alive_workers()) + 1, timeout)

    def _spawn(self, process: SparkProcess) -> None:
        if process.pid is not None:
            raise RuntimeError(f"{process.name} runs already (pid {process.pid})")
        with open(process.log_path, "ab") as log:
            # A group of its own: an executor (the worker's child) is stopped with its worker.
            process.pid = subprocess.Popen(process.command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                           env=daemon_env(), cwd=process.log_path.parent,
                                           start_new_session=True).pid

    @contextlib.contextmanager
    def running(self, timeout: float = 90.0) -> Iterator["SparkStandalone"]:
        try:
            self.start(timeout)
            yield self
        finally:
            self.close()

    # -- the master's view ------------------------------------------------------------------------

    def state(self) -> Optional[dict]:
        """The master's JSON state (its web UI's /json/), None while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.web_url}/json/", timeout=2) as answer:
                return json.load(answer)
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def alive_workers(self) -> list[dict]:
        state = self.state() or {}
        return [w for w in state.get("workers", ()) if w.get("state") == ALIVE]

    def wait_for_workers(self, count: int, timeout: float) -> list[dict]:
        def enough() -> Optional[list[dict]]:
            for worker in self.workers:
                self._check_running(worker)
            alive = self.alive_workers()
            return alive if len(alive) >= count else None
        return wait_until(enough, timeout, f"{count} alive Spark workers at {self.web_url}", interval=0.2)

    def worker_of(self, pid: int) -> Optional[int]:
        """The index of the worker whose process tree holds `pid` (an
        executor's Python worker, say), by its parent chain; None if none."""
        workers = {w.pid: i for i, w in enumerate(self.workers) if w.pid is not None}
        while pid > 1:
            if pid in workers:
                return workers[pid]
            pid = _parent(pid)
        return None

    def _check_running(self, process: SparkProcess) -> None:
        """Raises, with the end of its log, if `process` was started and has exited."""
        if process.pid is not None and _exited(process.pid):
            process.pid = None
            raise RuntimeError(f"Spark {process.name} exited:\n{self.log_tail(process)}")

    # -- stopping ---------------------------------------------------------------------------------

    def kill_worker(self, index: int) -> int:
        """kill -9 worker `index` and its executor (a lost machine); its PID."""
        worker = self.workers[index]
        pid, worker.pid = worker.pid, None
        if pid is None:
            raise RuntimeError(f"{worker.name} is not running")
        _signal_group(pid, signal.SIGKILL)
        _reap(pid)
        return pid

    def close(self) -> None:
        """Stop every process still running, workers first: SIGTERM to its
        group, SIGKILL to what is left after stop_timeout_s."""
        running = [p for p in (*self.workers, self.master) if p.pid is not None]
        for process in running:
            _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout_s
        for process in running:
            while not _exited(process.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            _signal_group(process.pid, signal.SIGKILL)  # what the JVM left in its group (an executor)
            _reap(process.pid)
            process.pid = None

    # -- for drivers ------------------------------------------------------------------------------

    def driver_env(self, base: Optional[dict[str, str]] = None) -> dict[str, str]:
        return spark_env(base)

    def submit_command(self, app: str | Path, args: Sequence[str] = (), conf: Optional[dict[str, str]] = None,
                       *, short: bool = False) -> list[str]:
        """spark-submit of a Python file to this cluster (client deploy mode:
        the driver runs in the spark-submit process). `short`: a job of
        seconds (a test's), whose driver and executor JVMs start on less CPU
        as the daemons do, executors at 512 MiB."""
        command = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url,
                   "--conf", "spark.ui.enabled=false", "--conf", f"spark.driver.host={HOST}"]
        if short:
            command += ["--driver-java-options", DAEMON_JAVA_OPTS,
                        "--conf", f"spark.executor.extraJavaOptions={DAEMON_JAVA_OPTS}",
                        "--conf", "spark.executor.memory=512m"]
        for key, value in (conf or {}).items():
            command += ["--conf", f"{key}={value}"]
        return [*command, str(app), *args]

    def log_tail(self, process: SparkProcess, lines: int = 20) -> str:
        try:
            return "\n".join(process.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _parent(pid: int) -> int:
    """Its parent's PID from /proc (0 once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rpartition(")")[2].split()[1])  # after "pid (comm)": state, ppid


def _exited(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="A Spark standalone cluster (1 master, N workers) on 127.0.0.1, "
                                                 "in the foreground until Ctrl-C.")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1g", help="memory per worker")
    parser.add_argument("--dir", help="work directories and logs (default: a temporary directory, removed at the end)")
    args = parser.parse_args(argv)
    # SIGTERM as Ctrl-C, and Ctrl-C even where a shell started us with SIGINT ignored (a
    # background job): the finally below stops the cluster either way.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)
    with contextlib.ExitStack() as stack:
        directory = Path(args.dir) if args.dir else Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="spark-standalone-")))
        cluster = SparkStandalone(directory, workers=args.workers, cores=args.cores, memory=args.memory)
        started = time.monotonic()
        try:
            with cluster.running():
                print(f"Spark master {cluster.master_url} (web UI {cluster.web_url}), "
                      f"{len(cluster.workers)} workers, up in {time.monotonic() - started:.1f} s; logs and work dirs in {directory}", flush=True)
                print(f"  spark-submit --master {cluster.master_url} spark_jobs/__main__.py sql ...   "
                      f"or   kraftlog spark JOB --master {cluster.master_url} ...", flush=True)
                print("Ctrl-C stops it.", flush=True)
                while True:
                    time.sleep(3600)
        except KeyboardInterrupt:
            print("stopped", flush=True)


if __name__ == "__main__":
    main()
