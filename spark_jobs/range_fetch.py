"""One Spark task's fetch loop: the raw record batches of one partition's
offsets [start, end), from its leader, as the broker stores them.

Runs inside an executor's Python worker, which opens its own gRPC channels
here (a channel cannot be pickled from the driver). Fetch is long-polled
(max_wait_ms) and the broker only answers below the high watermark (the
last stable offset read_committed), so a task waiting for data a new
leader has not yet committed does not spin.
On NOT_LEADER_OR_FOLLOWER, a leader epoch error or a lost connection the
task refreshes metadata and asks again at the same offset: the new leader
serves exactly the records the old one had acknowledged.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Iterator, Optional

import grpc

from client.cluster import CALL_TIMEOUT_S, Cluster
from client.metadata_cache import STALE_METADATA_ERRORS
from client.errors import KafkaError, NetworkError, error_for_code
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import end_offset
from kafka_protocol.errors import Errors
from security.client_security import ClientSecurity

from .options import EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED
from .planning import OffsetRange
from .topic_offsets import RETRY_BACKOFF_S, list_offsets

log = logging.getLogger(__name__)

MAX_WAIT_MS = 500
PREFETCH_CHUNKS = 2
_DONE = object()


@dataclass(frozen=True)
class FetchSettings:
    bootstrap: str
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120_000  # Spark's kafkaConsumer.pollTimeoutMs: no progress for this long fails the task
    max_bytes: int = 4 << 20
    security: ClientSecurity = ClientSecurity()  # kraftlog.security.protocol, .ssl.*, .sasl.* (repr hides secrets)
    isolation_level: int = READ_UNCOMMITTED  # READ_COMMITTED: below the LSO, with the aborted transactions


@dataclass(frozen=True)
class FetchedChunk:
    """Whole batches from one Fetch answer; records below `position` or at or
    past `end` are not the task's and are dropped by the decoder."""

    records: bytes
    position: int
    end: int
    # read_committed: the answer's aborted transactions, (producer id, first
    # offset), whose batches the decoder drops (kafka_protocol/read_committed.py); None: read_uncommitted.
    aborted: Optional[tuple[tuple[int, int], ...]] = None


def fetch_range(settings: FetchSettings, rng: OffsetRange) -> Iterator[FetchedChunk]:
    """The range's chunks, fetched one ahead on a thread: the next Fetch is on
    the wire (the GIL released) while the caller decodes this one."""
    ahead: queue.Queue = queue.Queue(maxsize=PREFETCH_CHUNKS)
    stop = threading.Event()

    def fetch() -> None:
        try:
            with Cluster(settings.bootstrap, settings.security) as cluster:
                for chunk in _RangeFetch(cluster, settings, rng).chunks():
                    while not stop.is_set():
                        try:
                            ahead.put(chunk, timeout=0.5)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
            ahead.put(_DONE)
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread, raised there
            ahead.put(exc)

    thread = threading.Thread(target=fetch, name=f"fetch-{rng.topic}-{rng.partition}", daemon=True)
    thread.start()
    try:
        while True:
            item = ahead.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=CALL_TIMEOUT_S + MAX_WAIT_MS / 1000 + 1)


class _RangeFetch:
    def __init__(self, cluster: Cluster, settings: FetchSettings, rng: OffsetRange) -> None:
        self.cluster = cluster
        self.settings = settings
        self.rng = rng
        self.tp = (rng.topic, rng.partition)
        self.name = f"{rng.topic}-{rng.partition}"

    def chunks(self) -> Iterator[FetchedChunk]:
        position = self.rng.start
        if position == EARLIEST:
            position = list_offsets(self._refreshed(), {self.tp: EARLIEST})[self.tp]
        idle_since = time.monotonic()
        last_problem = "no data yet"
        while position < self.rng.end:
            if time.monotonic() - idle_since > self.settings.poll_timeout_ms / 1000:
                raise NetworkError(f"{self.name}: no progress at offset {position} (reading to {self.rng.end}) "
                                   f"for kafkaConsumer.pollTimeoutMs={self.settings.poll_timeout_ms} "
                                   f"(last: {last_problem})")
            answer = self._fetch_once(position)
            if isinstance(answer, str):
                last_problem = answer
                time.sleep(RETRY_BACKOFF_S)
                self._refresh_quietly()
                continue
            if answer.error_code == Errors.OFFSET_OUT_OF_RANGE:
                moved = self._out_of_range(position)
                if moved == position:
                    last_problem = f"OFFSET_OUT_OF_RANGE at {position} from a stale leader"
                    time.sleep(RETRY_BACKOFF_S)
                else:
                    position, idle_since = moved, time.monotonic()
                continue
            if answer.error_code:
                last_problem = str(error_for_code(answer.error_code, self.name))
                if answer.error_code not in STALE_METADATA_ERRORS:
                    raise error_for_code(answer.error_code, f"Fetch of {self.name} at offset {position}")
                time.sleep(RETRY_BACKOFF_S)
                self._refresh_quietly()
                continue
            records = answer.records
            if not records:
                last_problem = f"high watermark {answer.high_watermark}, waiting for offset {position}"
                continue  # the long poll waited already
            aborted = None
            if self.settings.isolation_level == READ_COMMITTED:
                aborted = tuple((a.producer_id, a.first_offset) for a in answer.aborted_transactions)
            yield FetchedChunk(records, position, self.rng.end, aborted)
            position = max(position, end_offset(records))
            idle_since = time.monotonic()

    def _fetch_once(self, position: int) -> "bpb.FetchResponse.PartitionData | str":
        leader = self._leader()
        if leader is None:
            return "no leader known"
        request = bpb.FetchRequest(
            replica_id=-1, max_wait_ms=MAX_WAIT_MS, min_bytes=1, max_bytes=self.settings.max_bytes,
            isolation_level=self.settings.isolation_level,
            topics=[bpb.FetchRequest.FetchTopic(topic=self.rng.topic, partitions=[bpb.FetchRequest.FetchPartition(
                partition=self.rng.partition, current_leader_epoch=-1, fetch_offset=position,
                last_fetched_epoch=-1, partition_max_bytes=self.settings.max_bytes)])])
        try:
            response = self.cluster.broker_stub(leader).Fetch(request, timeout=CALL_TIMEOUT_S + MAX_WAIT_MS / 1000)
        except grpc.RpcError as exc:
            return f"broker {leader}: {exc.code().name}"  # type: ignore[attr-defined]
        if response.error_code:
            return str(error_for_code(response.error_code, "Fetch"))
        return response.responses[0].partitions[0]

    def _out_of_range(self, position: int) -> int:
        """Records at `position` are gone (retention, or a truncation below it):
        Spark's failOnDataLoss decides between failing and skipping ahead."""
        bounds = list_offsets(self._refreshed(), {self.tp: EARLIEST})
        earliest = bounds[self.tp]
        latest = list_offsets(self.cluster, {self.tp: LATEST}, self.settings.isolation_level)[self.tp]
        detail = f"{self.name}: offset {position} is out of range (the log holds {earliest} up to {latest})"
        if earliest <= position <= latest:
            log.info("%s; asking again (the answer came from a stale leader)", detail)
            return position
        if position < earliest and not self.settings.fail_on_data_loss:
            log.warning("%s; skipping to %s (failOnDataLoss=false)", detail, earliest)
            return earliest
        if not self.settings.fail_on_data_loss:
            log.warning("%s; nothing more to read (failOnDataLoss=false)", detail)
            return self.rng.end
        raise error_for_code(Errors.OFFSET_OUT_OF_RANGE,
                             f"{detail}: data was lost; set option 'failOnDataLoss' to false "
                             "to skip it")

    def _leader(self) -> Optional[int]:
        for attempt in range(2):
            info = self.cluster.leader_for(*self.tp)
            if info is not None:
                return info.leader
            if attempt == 0:
                self._refresh_quietly()
        return None

    def _refreshed(self) -> Cluster:
        self.cluster.refresh([self.rng.topic])
        return self.cluster

    def _refresh_quietly(self) -> None:
        try:
            self.cluster.refresh([self.rng.topic])
        except KafkaError as exc:
            log.info("metadata refresh for %s failed: %s", self.name, exc)
