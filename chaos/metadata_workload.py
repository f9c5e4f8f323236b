"""Topic metadata operations for a chaos run, checked with the `metadata` model.

One thread creates, deletes and describes a few topics (`meta-0`..`meta-3`)
with the ops of chaos/checker/README.md (key = the topic name):

- create(partitions) -> "ok" | "TOPIC_ALREADY_EXISTS", through a broker that
  forwards it to the active controller;
- delete() -> "ok" | "UNKNOWN_TOPIC_OR_PARTITION", likewise;
- describe() -> the partition count | "UNKNOWN_TOPIC_OR_PARTITION".

Kafka's metadata reads are not linearizable: a broker answers from its own
image, which may lag the controller. `describe` here is made linearizable
the way a Raft read index is: it asks the quorum leader for its high
watermark when the read begins, then asks a broker whose image has applied
every record below it (DescribeCluster's metadata_offset), and reads the
topic there. The image only moves forward, so the answer reflects at least
every change committed before the read began.

Outcomes are recorded conservatively. The broker retries a forwarded
request on another controller after a timeout, so an answer of
TOPIC_ALREADY_EXISTS (or UNKNOWN_TOPIC_OR_PARTITION for a delete) may be
the echo of this very request's first attempt: such answers are `info`
(unknown whether this op took effect), not `ok`. Timeouts and lost
connections are `info`; a read that got no answer is `fail`.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import grpc

from client.admin import describe_quorum
from client.cluster import Cluster
from kafka_protocol.errors import Errors
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from security.client_security import ClientSecurity

from .history import FAIL, INFO, OK, HistoryRecorder

TOPIC_PREFIX = "meta-"
TOPICS = tuple(f"{TOPIC_PREFIX}{i}" for i in range(4))
CALL_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 10.0
OPS = ("create", "delete", "describe")


@dataclass
class MetadataWorkload:
    history: HistoryRecorder
    bootstrap: str  # brokers
    controllers: str  # controller listeners, for the read index
    process_base: int = 1 << 24  # process numbers of its own
    seed: int = 0
    interval_s: float = 0.2
    security: Optional[ClientSecurity] = None  # to the brokers (a secured run: its SASL_SSL user)
    controller_security: Optional[ClientSecurity] = None  # to the controllers (mTLS there)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: Optional[threading.Thread] = field(default=None, init=False)
    errors: list[str] = field(default_factory=list, init=False)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._guarded, name="chaos-metadata", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self.errors.append(f"metadata workload still running after {timeout:g}s")

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - reported in the run's summary
            self.errors.append(f"metadata workload: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        rng = random.Random(self.seed)
        process = self.process_base
        with Cluster(self.bootstrap, self.security) as cluster:
            while not self._stop.is_set():
                topic, op = rng.choice(TOPICS), rng.choice(OPS)
                if op == "create":
                    self._create(cluster, process, topic, rng.randint(1, 3))
                elif op == "delete":
                    self._delete(cluster, process, topic)
                else:
                    self._describe(cluster, process, topic)
                process += 1  # an op of unknown outcome leaves its process open: never reuse one
                self._stop.wait(self.interval_s)

    def _forwarded(self, cluster: Cluster, method: str, request: Any) -> Optional[Any]:
        """One broker's answer, no retries of our own (a retry could apply the op twice)."""
        stub = next(iter(cluster.any_broker_calls()))
        try:
            response = getattr(stub, method)(request, timeout=CALL_TIMEOUT_S)
        except grpc.RpcError:
            return None
        return None if response.error_code else response.topics[0]

    def _create(self, cluster: Cluster, process: int, topic: str, partitions: int) -> None:
        call = self.history.invoke(process, "create", topic, partitions)
        request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=partitions, replication_factor=1)])
        result = self._forwarded(cluster, "CreateTopics", request)
        if result is None:
            self.history.complete(call, INFO, error="no answer")
        elif result.error_code == 0:
            self.history.complete(call, OK, "ok")
        elif result.error_code == Errors.TOPIC_ALREADY_EXISTS:
            self.history.complete(call, INFO, error="TOPIC_ALREADY_EXISTS (maybe this request's own retry)")
        else:
            self.history.complete(call, FAIL, error=f"error {result.error_code}")

    def _delete(self, cluster: Cluster, process: int, topic: str) -> None:
        call = self.history.invoke(process, "delete", topic)
        result = self._forwarded(cluster, "DeleteTopics", cpb.DeleteTopicsRequest(names=[topic]))
        if result is None:
            self.history.complete(call, INFO, error="no answer")
        elif result.error_code == 0:
            self.history.complete(call, OK, "ok")
        elif result.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            self.history.complete(call, INFO, error="UNKNOWN_TOPIC_OR_PARTITION (maybe this request's own retry)")
        else:
            self.history.complete(call, FAIL, error=f"error {result.error_code}")

    def _describe(self, cluster: Cluster, process: int, topic: str) -> None:
        call = self.history.invoke(process, "describe", topic)
        answer = self._read_index_describe(cluster, topic)
        if answer is None:
            self.history.complete(call, FAIL, error="no broker caught up in time")
        else:
            self.history.complete(call, OK, answer)

    def _read_index_describe(self, cluster: Cluster, topic: str) -> Optional[Any]:
        deadline = time.monotonic() + READ_TIMEOUT_S
        try:
            read_index = describe_quorum(self.controllers, timeout=3.0,
                                         security=self.controller_security)["high_watermark"]
        except Exception:  # noqa: BLE001 - no leader now: the read fails, changing nothing
            return None
        while time.monotonic() < deadline and not self._stop.is_set():
            for stub in cluster.any_broker_calls():
                try:
                    applied = stub.DescribeCluster(bpb.DescribeClusterRequest(), timeout=2.0).metadata_offset
                    if applied < read_index - 1:
                        continue
                    response = stub.Metadata(bpb.MetadataRequest(topics=[topic]), timeout=2.0)
                except grpc.RpcError:
                    continue
                [found] = response.topics
                if found.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
                    return "UNKNOWN_TOPIC_OR_PARTITION"
                return len(found.partitions)
            time.sleep(0.05)
        return None
