"""For every test: the nodes of local clusters are forked from one pre-imported parent
(devcluster/fork_server.py) instead of each paying its imports (about 1.9 s of CPU a broker).
Inherited by the subprocesses tests start (a `kraftlog bench --quick`, a chaos run). Set
KRAFTLOG_TEST_NODES=subprocess to run every node from scratch instead.

`make test` runs the suite on several pytest-xdist workers (`-n N --dist loadscope
--no-loadscope-reorder`, with the scheduler below): most of its time is spent waiting (on
clusters starting, elections, timeouts), not computing, so a 2-core machine runs several
modules at once. Each module stays on
one worker (its module-scoped cluster starts once), the Spark modules share one worker (a JVM each,
and several at once starve the rest), and the longest groups are handed out first."""
import os
from pathlib import Path

import pytest

from devcluster import fork_server
from devcluster.local_processes import NODES_ENV
from tests import cli_process

os.environ.setdefault(NODES_ENV, "fork")


# Groups of modules that run one after another on one worker, by path prefix.
SERIAL_GROUPS = {"tests/spark_jobs/": "spark"}
# Handed out first, longest first (seconds of one `make test`, roughly): the rest follow in
# collection order and fill the workers' gaps.
LONGEST_FIRST = (
    "tests/spark_jobs/",                            # ~320 s in all
    "tests/chaos/test_chaos_runs.py",               # ~230 s
    "tests/deploy/test_multi_host.py",
    "tests/bench/test_bench_quick.py",
    "tests/adversarial/test_hostile_requests.py",
    "tests/kraftlog/test_cli_admin.py",
    "tests/metadata_quorum/test_simulator.py",
    "tests/partition_log/test_log_properties.py",
    "tests/client/test_producer_faults.py",
    "tests/kraftlog/test_metrics.py",
)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _group(nodeid: str) -> str:
    module = _module(nodeid)
    return next((name for prefix, name in SERIAL_GROUPS.items() if module.startswith(prefix)), module)


def _rank(item: pytest.Item) -> int:
    module = _module(item.nodeid)
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if module.startswith(prefix)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: its collection order is the order work is handed out
        items.sort(key=_rank)  # stable: within a rank, collection order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """Work handed out a group at a time: a module, or all of SERIAL_GROUPS' modules. (xdist's own
    `loadgroup` renames node ids, which pytest 9 no longer lets a plugin do.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return ModuleGroups(config, log)


def pytest_sessionstart(session: pytest.Session) -> None:
    """On a run of the whole suite (`make test`), start the fork servers of the nodes and of the
    CLI now: their imports (a few seconds of CPU) overlap with the collection of the tests."""
    if not any(Path(arg).resolve() == Path(__file__).parent for arg in session.config.args):
        return
    if session.config.getoption("dist", "no") != "no" and not hasattr(session.config, "workerinput"):
        return  # pytest-xdist's controller runs no test: its workers start their own
    if os.environ[NODES_ENV] == "fork":
        fork_server.shared_server()
    if os.environ.get(cli_process.CLI_ENV) != "subprocess":
        fork_server.shared_server(cli_process.PRELOAD, blocked=())
