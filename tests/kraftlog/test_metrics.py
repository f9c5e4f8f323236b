"""Prometheus metrics of real nodes: three controllers and three brokers,
each scraped over HTTP and parsed with prometheus_client's own parser.

The active controller is the one node with ActiveControllerCount 1; the
brokers' PartitionCount and LeaderCount match what Metadata says; produce,
consume and a malformed request move the request counters; a killed broker
makes its partners' ISRs shrink (UnderReplicatedPartitions, IsrShrinks) and,
once restarted, grow back (IsrExpands, no under-replicated partition left);
a transaction (raw RPCs) shows at its coordinator and its partition's leader
until it commits, and one left open past its timeout is aborted and counted.
Produce and consume move the brokers' traffic counters; the broker's
leaderships move by counted elections; every metric the Grafana dashboard
and the alert rules of deploy/monitoring/ name is exposed by some node, and
a real Prometheus scraping the cluster with those rules answers every query
of the dashboard.
Plus the metrics listener's configuration and HTTP answers, without a cluster.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Optional

import grpc
import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import free_ports, wait_until
from kraftlog_server.metrics.exposition import start_metrics_server
from broker.service import SERVICE as BROKER_SERVICE
from kraftlog_server.metrics.requests import is_consumer_fetch
from kraftlog_server.metrics.state import unusable_log_dirs
from kraftlog_server.server_config import METRICS_LISTENER, ServerConfig
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc
from kafka_protocol.errors import Errors, InvalidConfigError
from kafka_protocol.records import Record, encode_batch

from ..client.produce_consume import consume, produce_values
from .monitoring_files import RULES, TOOLS_MISSING, dashboard, filled_queries, find_tool, named_metrics

# The leader's own ISR check (replica.lag.time.max.ms) must drop a killed
# follower long before the controller fences it (broker.session.timeout.ms):
# Kafka's IsrShrinks counts only the leader's shrinks, not the controller's.
PROPERTIES = {
    "broker.session.timeout.ms": 20000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 2000,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "transaction.state.log.num.partitions": 3,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}
RM = "kafka_server_replicamanager_"
KC = "kafka_controller_kafkacontroller_"
RAFT = "kafka_server_raftmetrics_"
REQUESTS = "kafka_network_requestmetrics_requests_total"
ERRORS = "kafka_network_requestmetrics_errors_total"
LATENCY_COUNT = "kafka_network_requestmetrics_totaltimems_count"
TOPICS = "kafka_server_brokertopicmetrics_"
ELECTIONS = "kafka_controller_controllerstats_leaderelections_total"
UNCLEAN = "kafka_controller_controllerstats_uncleanleaderelections_total"
TXN = "kraftlog_transaction_coordinator_"
TXN_PARTITION = "kraftlog_transaction_partition_"

Samples = dict[str, list]  # sample name -> prometheus_client Sample(name, labels, value, ...)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("metrics"), properties=PROPERTIES).running() as c:
        yield c


def scrape(address: str) -> Samples:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def exposed_names(address: str) -> set[str]:
    """Every sample name the node serves or declares: a family with no
    series yet (no request has failed) still names its samples."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(sample.name for sample in family.samples)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return names


def try_scrape(address: str) -> Optional[Samples]:
    try:
        return scrape(address)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def value(samples: Samples, name: str, **labels: str) -> Optional[float]:
    """The sample's value (None when absent): the one whose labels include `labels`."""
    for sample in samples.get(name, ()):
        if all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    return None


def scrape_nodes(c: LocalCluster, nodes) -> dict[int, Samples]:
    return {n: scrape(c.metrics_addresses[n]) for n in nodes}


def total(by_node: dict[int, Samples], name: str, **labels: str) -> float:
    return sum(value(s, name, **labels) or 0.0 for s in by_node.values())


# --- one cluster, every node scraped ----------------------------------------------------------

def test_one_active_controller_and_every_node_agrees_on_the_leader(cluster) -> None:
    nodes = (*cluster.controllers, *cluster.brokers)

    def settled() -> Optional[dict[int, Samples]]:
        by_node = scrape_nodes(cluster, nodes)
        active = [n for n in cluster.controllers if value(by_node[n], KC + "activecontrollercount") == 1]
        leaders = {value(by_node[n], RAFT + "current_leader") for n in nodes}
        return by_node if len(active) == 1 and leaders == {float(active[0])} else None

    by_node = wait_until(settled, 30, "one active controller that every node follows", interval=0.2)
    assert total({n: by_node[n] for n in cluster.controllers}, KC + "activecontrollercount") == 1
    active = next(n for n in cluster.controllers if value(by_node[n], KC + "activecontrollercount") == 1)
    assert value(by_node[active], RAFT + "current_state", current_state="leader") == 1
    for n in cluster.controllers:
        if n != active:
            assert value(by_node[n], RAFT + "current_state", current_state="follower") == 1
        assert value(by_node[n], RM + "leadercount") is None  # a controller-only node has no replicas
    epochs = {value(by_node[n], RAFT + "current_epoch") for n in nodes}
    assert len(epochs) == 1 and epochs.pop() >= 1
    for n in cluster.brokers:
        s = by_node[n]
        assert value(s, RAFT + "current_state", current_state="observer") == 1
        assert value(s, KC + "activecontrollercount") is None  # brokers are not controllers
        assert value(s, "kafka_server_kafkaserver_brokerstate") == 3  # RUNNING
        assert value(s, RAFT + "high_watermark") <= value(s, RAFT + "log_end_offset")
    assert value(by_node[active], "process_resident_memory_bytes") > 0


def test_partition_and_leader_counts_match_the_metadata(cluster) -> None:
    cluster.create_topic("metered", partitions=6, replication_factor=2)
    cluster.wait_for_leaders("metered")

    def matching() -> Optional[bpb.MetadataResponse]:
        answer = cluster.metadata()
        if answer is None:
            return None
        partitions = [p for t in answer.topics for p in t.partitions]
        by_node = scrape_nodes(cluster, cluster.brokers)
        for b in cluster.brokers:
            hosted = sum(b in p.replica_nodes for p in partitions)
            led = sum(p.leader_id == b for p in partitions)
            if (value(by_node[b], RM + "partitioncount"), value(by_node[b], RM + "leadercount")) != (hosted, led):
                return None
        for n in cluster.controllers:
            s = scrape(cluster.metrics_addresses[n])
            if (value(s, KC + "globaltopiccount"), value(s, KC + "globalpartitioncount")) != \
                    (len(answer.topics), len(partitions)):
                return None
        return answer

    answer = wait_until(matching, 30, "broker and controller gauges matching Metadata", interval=0.2)
    metered = next(t for t in answer.topics if t.name == "metered")
    assert len(metered.partitions) == 6
    by_node = scrape_nodes(cluster, cluster.brokers)
    assert total(by_node, RM + "leadercount") >= 6
    assert total(by_node, RM + "partitioncount") >= 12  # RF 2
    for n in cluster.controllers:
        s = scrape(cluster.metrics_addresses[n])
        assert value(s, KC + "offlinepartitionscount") == 0
        assert (value(s, KC + "activebrokercount"), value(s, KC + "fencedbrokercount")) == (3, 0)


def test_request_counters_follow_produce_fetch_and_errors(cluster) -> None:
    cluster.create_topic("requests", partitions=3, replication_factor=3)
    cluster.wait_for_leaders("requests")
    before = scrape_nodes(cluster, cluster.brokers)
    values = [f"value-{i}".encode() for i in range(60)]
    summary = produce_values(cluster.bootstrap, "requests", values, batch_records=10)
    assert summary.acknowledged == 60 and not summary.failed, summary
    consumed = consume(cluster.bootstrap, "requests", max_messages=60)
    assert sorted(r.value for r in consumed) == sorted(values)
    after = scrape_nodes(cluster, cluster.brokers)

    # Every value was appended once by its leader and copied by two followers,
    # read once by the consumer (refetches aside) and by each follower.
    produced = sum(map(len, values))
    # (A consumer's offset commits are appended too: at least, not exactly.)
    assert total(after, TOPICS + "messagesin_total") - total(before, TOPICS + "messagesin_total") >= 60
    for name, at_least in (("bytesin", produced), ("bytesout", produced), ("replicationbytesin", 2 * produced),
                           ("replicationbytesout", 2 * produced)):
        assert total(after, f"{TOPICS}{name}_total") - total(before, f"{TOPICS}{name}_total") >= at_least, name

    # Six batches, one Produce each (a retry would only add more).
    assert total(after, REQUESTS, request="Produce") - total(before, REQUESTS, request="Produce") >= 6
    assert total(after, REQUESTS, request="FetchConsumer") > total(before, REQUESTS, request="FetchConsumer")
    assert total(after, REQUESTS, request="FetchFollower") > total(before, REQUESTS, request="FetchFollower")
    assert total(after, REQUESTS, request="ListOffsets") > total(before, REQUESTS, request="ListOffsets")
    for b in cluster.brokers:
        s = after[b]
        for request in ("Produce", "Fetch"):
            # Every request is timed; a Fetch is a consumer's or a follower's.
            assert value(s, LATENCY_COUNT, request=request) == value(s, REQUESTS, request=request)
        assert value(s, REQUESTS, request="Fetch") == \
            (value(s, REQUESTS, request="FetchConsumer") or 0) + (value(s, REQUESTS, request="FetchFollower") or 0)
        buckets = [x for x in s["kafka_network_requestmetrics_totaltimems_bucket"] if x.labels["request"] == "Produce"]
        if buckets:  # cumulative, ending with +Inf = the count
            assert [x.value for x in buckets] == sorted(x.value for x in buckets)
            assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == value(s, LATENCY_COUNT, request="Produce")

    # Bytes that are no ProduceRequest: INVALID_ARGUMENT, counted as Produce's error.
    broker = cluster.brokers[0]
    errors_before = value(scrape(cluster.metrics_addresses[broker]), ERRORS, request="Produce",
                          error="INVALID_ARGUMENT") or 0
    raw = cluster.channel(cluster.broker_addresses[broker]).unary_unary(
        f"/{BROKER_SERVICE.full_name}/Produce", request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.RpcError) as refused:
        raw(b"\xff\xff\xff", timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # grpc.aio's abort sends the status before it raises into the counting
    # wrapper, so the client can scrape a moment before the count lands.
    def counted() -> Optional[float]:
        now = value(scrape(cluster.metrics_addresses[broker]), ERRORS, request="Produce", error="INVALID_ARGUMENT")
        return now if (now or 0) > errors_before else None

    assert wait_until(counted, 10, "the INVALID_ARGUMENT count", interval=0.1) == errors_before + 1


# --- transactions, by raw RPCs ------------------------------------------------------------------

RETRY_TXN = {Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR,
             Errors.CONCURRENT_TRANSACTIONS}


def begin_transaction(c: LocalCluster, tid: str, topic: str, timeout_ms: int, values: list[bytes]) -> tuple:
    """InitProducerId, AddPartitionsToTxn and one transactional batch (acks=all) to
    `topic`-0: (coordinator id, the coordinator's stub, producer id, epoch, the partition's leader)."""
    def found() -> Optional[int]:
        answer = gpb_grpc.GroupCoordinatorStub(c.channel(c.broker_addresses[c.brokers[0]])).FindCoordinator(
            gpb.FindCoordinatorRequest(key_type=1, keys=[tid]), timeout=30)
        return None if answer.coordinators[0].error_code else answer.coordinators[0].node_id

    def initialized() -> Optional[bpb.InitProducerIdResponse]:
        answer = c.broker_stub(wait_until(found, 60, f"the coordinator of {tid}", interval=0.2)).InitProducerId(
            bpb.InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=-1,
                                      producer_epoch=-1), timeout=30)
        return None if answer.error_code in RETRY_TXN else answer

    init = wait_until(initialized, 60, f"InitProducerId of {tid}", interval=0.2)
    assert init.error_code == Errors.NONE, init
    coordinator = wait_until(found, 60, f"the coordinator of {tid}", interval=0.2)
    txn = tpb_grpc.TransactionCoordinatorStub(c.channel(c.broker_addresses[coordinator]))
    added = txn.AddPartitionsToTxn(tpb.AddPartitionsToTxnRequest(
        transactional_id=tid, producer_id=init.producer_id, producer_epoch=init.producer_epoch,
        topics=[tpb.TxnTopic(name=topic, partitions=[0])]), timeout=30)
    assert [r.error_code for t in added.results for r in t.results] == [Errors.NONE], added
    leader = c.metadata(None, [topic]).topics[0].partitions[0].leader_id
    batch = encode_batch([Record(None, v) for v in values], producer_id=init.producer_id,
                         producer_epoch=init.producer_epoch, base_sequence=0, transactional=True)
    produced = c.broker_stub(leader).Produce(bpb.ProduceRequest(acks=-1, timeout_ms=10000, transactional_id=tid,
                                                                topics=[bpb.ProduceRequest.TopicData(name=topic, partitions=[
                                                                    bpb.ProduceRequest.PartitionData(
                                                                        index=0, records=batch)])]), timeout=30)
    assert produced.responses[0].partitions[0].error_code == Errors.NONE, produced
    return coordinator, txn, init.producer_id, init.producer_epoch, leader


def test_a_transaction_shows_at_its_coordinator_and_partition_until_it_ends(cluster) -> None:
    cluster.create_topic("txn-metered", partitions=1, replication_factor=3)
    cluster.wait_for_leaders("txn-metered")
    coordinator, txn, pid, epoch, leader = begin_transaction(cluster, "metered-txn", "txn-metered", 60000,
                                                             [b"a", b"b", b"c"])
    # Open: three records above the last stable offset (the transaction's first offset, 0).
    at_leader = scrape(cluster.metrics_addresses[leader])
    assert value(at_leader, TXN_PARTITION + "open_transactions") == 1
    assert value(at_leader, TXN_PARTITION + "unstable_partitions") == 1
    assert value(at_leader, TXN_PARTITION + "lso_lag_max") == 3
    assert value(at_leader, TXN_PARTITION + "lso_lag_sum") == 3
    at_coordinator = scrape(cluster.metrics_addresses[coordinator])
    assert value(at_coordinator, TXN + "transactions", state="Ongoing") == 1
    assert value(at_coordinator, TXN + "completed_total", result="commit") == 0

    ended = txn.EndTxn(tpb.EndTxnRequest(transactional_id="metered-txn", producer_id=pid, producer_epoch=epoch,
                                         committed=True), timeout=30)
    assert (ended.error_code, ended.producer_epoch) == (Errors.NONE, epoch + 1), ended

    def completed() -> Optional[tuple[Samples, Samples]]:
        by_coordinator, by_leader = scrape(cluster.metrics_addresses[coordinator]), \
            scrape(cluster.metrics_addresses[leader])
        if value(by_coordinator, TXN + "completed_total", result="commit") != 1 or \
                value(by_leader, TXN_PARTITION + "open_transactions") != 0:
            return None
        return by_coordinator, by_leader

    by_coordinator, by_leader = wait_until(completed, 30, "the commit's markers written", interval=0.2)
    assert value(by_coordinator, TXN + "pending_markers") == 0
    assert value(by_coordinator, TXN + "transactions", state="Ongoing") == 0
    assert value(by_coordinator, TXN + "transactions", state="CompleteCommit") == 1
    assert value(by_coordinator, TXN + "completed_total", result="abort") == 0
    assert (value(by_leader, TXN_PARTITION + "lso_lag_max"), value(by_leader, TXN_PARTITION + "unstable_partitions")) \
        == (0, 0)


def test_a_transaction_past_its_timeout_is_aborted_and_counted(cluster) -> None:
    cluster.create_topic("txn-timed-out", partitions=1, replication_factor=3)
    cluster.wait_for_leaders("txn-timed-out")
    before = total(scrape_nodes(cluster, cluster.brokers), TXN + "timed_out_total")
    coordinator, _, _, _, leader = begin_transaction(cluster, "metered-timeout", "txn-timed-out", 1000, [b"late"])

    # The machine moves to CompleteAbort as the record is handed to the log;
    # completed_total counts once that record is durable, a moment later.
    def aborted() -> Optional[Samples]:
        by_coordinator = scrape(cluster.metrics_addresses[coordinator])
        done = total(scrape_nodes(cluster, cluster.brokers), TXN + "timed_out_total") == before + 1 and \
            value(by_coordinator, TXN + "completed_total", result="abort") >= 1
        return by_coordinator if done else None

    by_coordinator = wait_until(aborted, 60, "the coordinator aborting the transaction on its timeout", interval=0.2)
    assert value(by_coordinator, TXN + "transactions", state="CompleteAbort") == 1
    wait_until(lambda: value(scrape(cluster.metrics_addresses[leader]), TXN_PARTITION + "open_transactions") == 0,
               30, "the ABORT marker at the partition", interval=0.2)


def test_every_node_measures_its_event_loop_lag(cluster) -> None:
    """kraftlog_event_loop_lag_seconds: a timer due every 10 ms, so a node up
    for a second has samples, each in exactly one bucket."""
    for node, samples in scrape_nodes(cluster, (*cluster.controllers, *cluster.brokers)).items():
        count = value(samples, "kraftlog_event_loop_lag_seconds_count")
        assert count is not None and count >= 10, node
        assert value(samples, "kraftlog_event_loop_lag_seconds_bucket", le="+Inf") == count


def test_cluster_status_shows_each_nodes_metrics_address(cluster) -> None:
    status = subprocess.run(
        [sys.executable, "-m", "kraftlog", "cluster", "status", "--config", str(cluster.cluster_file),
         "--data-dir", str(cluster.directory / "data"), "--json"],
        capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    nodes = {n["id"]: n for n in json.loads(status.stdout)["nodes"]}
    assert {i: n["metrics"] for i, n in nodes.items()} == \
        {i: f"http://{a}/metrics" for i, a in cluster.metrics_addresses.items()}
    assert all(n["alive"] for n in nodes.values())


def test_a_killed_broker_shrinks_isrs_and_its_return_expands_them(cluster) -> None:
    cluster.create_topic("isr-watch", partitions=3, replication_factor=3)
    topic = cluster.wait_for_leaders("isr-watch")
    # The victim must follow some partition a survivor leads: only a leader's
    # own shrink counts, and the controller's placement may give one broker
    # every leadership of the topic. The broker leading fewest is safe.
    led = {b: sum(p.leader_id == b for p in topic.partitions) for b in cluster.brokers}
    victim = min(cluster.brokers, key=lambda b: (led[b], -b))
    survivors = tuple(b for b in cluster.brokers if b != victim)
    wait_until(lambda: total(scrape_nodes(cluster, cluster.brokers), RM + "underreplicatedpartitions") == 0,
               60, "every ISR full before the kill", interval=0.2)
    before = scrape_nodes(cluster, survivors)
    elections_before = total(scrape_nodes(cluster, cluster.controllers), ELECTIONS)
    victim_leads = value(scrape(cluster.metrics_addresses[victim]), RM + "leadercount")

    cluster.kill(victim)  # kill -9 by PID
    # As in Kafka, a follower is out of sync only when it is behind the
    # leader's log end for replica.lag.time.max.ms: an idle partition keeps a
    # dead follower until the controller fences it. So write to each one.
    survivors_bootstrap = ",".join(cluster.broker_addresses[b] for b in survivors)
    for p in topic.partitions:
        if p.leader_id != victim:
            produce_values(survivors_bootstrap, "isr-watch", [b"after the kill"], acks=1, partition=p.partition_index)

    def shrunk() -> Optional[dict[int, Samples]]:
        by_node = scrape_nodes(cluster, survivors)
        grew = total(by_node, RM + "isrshrinks_total") > total(before, RM + "isrshrinks_total")
        under = any(value(s, RM + "underreplicatedpartitions") > 0 for s in by_node.values())
        return by_node if grew and under else None

    after_kill = wait_until(shrunk, 60, "a leader's ISR shrink after the kill", interval=0.2)
    leaders = [b for b in survivors if value(after_kill[b], RM + "underreplicatedpartitions") > 0]
    assert all(value(after_kill[b], RM + "leadercount") > 0 for b in leaders)
    assert try_scrape(cluster.metrics_addresses[victim]) is None  # it is gone

    cluster.start(victim)

    def healed() -> Optional[dict[int, Samples]]:
        by_node = {b: try_scrape(cluster.metrics_addresses[b]) for b in cluster.brokers}
        if any(s is None for s in by_node.values()):
            return None
        grew = total(by_node, RM + "isrexpands_total") > total(after_kill, RM + "isrexpands_total")
        return by_node if grew and total(by_node, RM + "underreplicatedpartitions") == 0 else None

    # The restarted broker registers once its old session expires (20 s), catches up, rejoins.
    healed_nodes = wait_until(healed, 120, "ISRs expanded again with the broker back", interval=0.5)
    assert all(value(s, "kafka_server_kafkaserver_brokerstate") == 3 for s in healed_nodes.values())
    # A standby controller may apply the unfencing a moment after the broker hears of it.
    wait_until(lambda: all(value(s, KC + "fencedbrokercount") == 0 and value(s, KC + "offlinepartitionscount") == 0
                           and value(s, KC + "activebrokercount") == 3
                           for s in scrape_nodes(cluster, cluster.controllers).values()),
               30, "every controller seeing three unfenced brokers and no offline partition", interval=0.2)
    # Fenced when its old session expired, the victim lost its leaderships to clean elections.
    controllers = scrape_nodes(cluster, cluster.controllers)
    assert total(controllers, ELECTIONS) - elections_before >= victim_leads
    assert total(controllers, UNCLEAN) == 0


def test_every_metric_the_dashboard_and_the_alert_rules_name_is_exposed(cluster) -> None:
    named = named_metrics()  # deploy/monitoring/: grafana-dashboard.json, alert-rules.yaml
    exposed = set().union(*(exposed_names(cluster.metrics_addresses[n])
                            for n in (*cluster.controllers, *cluster.brokers)))
    assert len(named) > 30 and "kafka_server_brokertopicmetrics_bytesin_total" in named
    assert sorted(named - exposed) == []
    broker = scrape(cluster.metrics_addresses[cluster.brokers[0]])
    assert value(broker, "kafka_log_logmanager_offlinelogdirectorycount") == 0
    assert value(broker, "kraftlog_log_dir_free_bytes") <= value(broker, "kraftlog_log_dir_total_bytes")

    def applied_everything() -> bool:  # the metadata log is idle: every node applies all that is committed
        by_node = scrape_nodes(cluster, (*cluster.controllers, *cluster.brokers))
        committed = max(value(by_node[n], KC + "lastcommittedrecordoffset") for n in cluster.controllers)
        applied = [value(by_node[n], KC + "lastappliedrecordoffset") for n in cluster.controllers] + \
            [value(by_node[n], "kafka_server_brokermetadatametrics_last_applied_record_offset")
             for n in cluster.brokers]
        return committed > 0 and applied == [committed] * len(applied)

    wait_until(applied_everything, 30, "every node's applied metadata offset at the last committed one",
               interval=0.2)


def test_a_prometheus_scraping_the_cluster_answers_every_dashboard_query(cluster, tmp_path) -> None:
    # deploy/monitoring/ end to end: a real Prometheus scrapes every node each second and evaluates
    # alert-rules.yaml; each query of the dashboard must return series (errors only once some
    # request failed), every rule evaluate without error, and no node lag behind the metadata log.
    prometheus = find_tool("prometheus")
    if prometheus is None:
        pytest.skip(f"prometheus {TOOLS_MISSING}")
    port = free_ports(1)[0]
    job = "kraftlog-test"
    (tmp_path / "prometheus.yaml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": job, "static_configs": [
            {"targets": [cluster.metrics_addresses[n] for n in cluster.controllers], "labels": {"role": "controller"}},
            {"targets": [cluster.metrics_addresses[n] for n in cluster.brokers], "labels": {"role": "broker"}}]}]}))
    queries = filled_queries(dashboard(), job, rate_interval="10s")

    def query(expr: str) -> list[dict]:
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as answer:
            result = json.load(answer)
        assert result["status"] == "success", (expr, result)
        return result["data"]["result"]

    def unanswered() -> list[str]:
        return [q for q in queries if not query(q) and "errors_total" not in q]

    def answered() -> bool:
        try:
            return not unanswered()
        except (urllib.error.URLError, ConnectionError):
            return False  # not listening yet

    def lags() -> Optional[set[float]]:
        series = query("kraftlog:metadata_lag_records")
        return {float(s["value"][1]) for s in series} if len(series) == 6 else None

    with open(tmp_path / "prometheus.log", "w") as log:
        server = subprocess.Popen([prometheus, f"--config.file={tmp_path / 'prometheus.yaml'}",
                                   f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                                  stdout=log, stderr=log)
        try:
            # Rates need two scrapes in their window.
            try:
                wait_until(answered, 30, "every dashboard query answered", interval=0.5)
            except TimeoutError:
                assert unanswered() == []  # names the queries without series
                raise
            # The metadata log is idle: every node has applied all of it.
            assert wait_until(lags, 10, "the recorded metadata lag of every node", interval=0.5) == {0.0}
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/rules", timeout=10) as answer:
                groups = json.load(answer)["data"]["groups"]
            assert [(r["name"], r["health"]) for g in groups for r in g["rules"] if r["health"] != "ok"] == []
            assert query('ALERTS{alertstate="firing"}') == []
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)


# --- without a cluster ---------------------------------------------------------------------------

NODE = {"node.id": 1, "process.roles": "controller", "cluster.id": "TWV0cmljc1Rlc3QtMDAx",
        "controller.quorum.voters": "1@127.0.0.1:19093", "listeners": "CONTROLLER://127.0.0.1:19093",
        "log.dirs": "/tmp/unused"}


@pytest.mark.parametrize("given, reason", [
    ("localhost", "is not HOST:PORT"),
    ("127.0.0.1:99999", "has no valid port"),
    ("127.0.0.1:0", "needs a port"),
    (9404, "expected HOST:PORT"),
    ("127.0.0.1:19093", "already used by listeners CONTROLLER://127.0.0.1:19093"),
])
def test_a_bad_metrics_listener_is_refused_with_key_and_reason(given, reason) -> None:
    with pytest.raises(InvalidConfigError) as refused:
        ServerConfig.from_mapping({**NODE, METRICS_LISTENER: given})
    message = refused.value.args[0]  # str() adds the Kafka name: INVALID_CONFIG: ...
    assert message.startswith(f"{METRICS_LISTENER}: ") and reason in message


def test_metrics_listener_values() -> None:
    assert ServerConfig.from_mapping(NODE).metrics_listener is None
    assert ServerConfig.from_mapping({**NODE, METRICS_LISTENER: ""}).metrics_listener is None
    assert ServerConfig.from_mapping({**NODE, METRICS_LISTENER: "127.0.0.1:9404"}).metrics_listener == \
        ("127.0.0.1", 9404)
    assert ServerConfig.from_mapping({**NODE, METRICS_LISTENER: ":9404"}).metrics_listener == ("", 9404)
    assert not any(METRICS_LISTENER in w for w in ServerConfig.from_mapping(NODE).warnings)


def test_a_taken_metrics_port_stops_the_node_with_one_line(tmp_path) -> None:
    controller, metrics = free_ports(2)
    config = tmp_path / "server.yaml"
    config.write_text(yaml.safe_dump({
        **NODE, "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"CONTROLLER://127.0.0.1:{controller}", "log.dirs": str(tmp_path / "data"),
        METRICS_LISTENER: f"127.0.0.1:{metrics}"}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", metrics))
        taken.listen()
        node = subprocess.run([sys.executable, "-m", "kraftlog", "server", "--config", str(config)],
                              capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert node.returncode == 1
    assert f"kraftlog: error: cannot listen on 127.0.0.1:{metrics} (metrics)" in node.stderr
    assert "Traceback" not in node.stderr


def test_the_listener_answers_metrics_and_refuses_the_rest() -> None:
    registry = CollectorRegistry(auto_describe=False)

    class One:
        def collect(self):
            yield GaugeMetricFamily("kafka_test_gauge", "a gauge", value=7)

    registry.register(One())

    def get(url: str, method: str = "GET") -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    async def scenario() -> list[tuple[int, bytes]]:
        server = await start_metrics_server(registry, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            return [await asyncio.to_thread(get, f"http://127.0.0.1:{port}{path}", method)
                    for path, method in (("/metrics", "GET"), ("/", "HEAD"), ("/nope", "GET"), ("/metrics", "POST"))]
        finally:
            server.close()
            await server.wait_closed()

    (ok, body), (head, empty), (missing, _), (post, _) = asyncio.run(scenario())
    assert ok == 200 and b"kafka_test_gauge 7.0" in body
    assert (head, empty) == (200, b"")
    assert (missing, post) == (404, 405)


def test_a_log_directory_that_is_gone_or_no_directory_counts_as_offline(tmp_path) -> None:
    usable = tmp_path / "data"
    usable.mkdir()
    a_file = tmp_path / "file"
    a_file.write_text("not a directory")
    assert unusable_log_dirs([usable]) == 0
    assert unusable_log_dirs([usable, tmp_path / "gone", a_file]) == 2


def test_consumer_fetches_are_told_from_followers_by_their_bytes() -> None:
    for replica_id, consumer in ((-1, True), (0, False), (4, False), (300, False), (2**31 - 1, False)):
        raw = bpb.FetchRequest(replica_id=replica_id, max_wait_ms=500, topics=[
            bpb.FetchRequest.FetchTopic(topic="t")]).SerializeToString()
        assert is_consumer_fetch(raw) is consumer, replica_id
    assert not is_consumer_fetch(b"") and not is_consumer_fetch(b"\x08")
