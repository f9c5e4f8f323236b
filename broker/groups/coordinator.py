"""The group coordinator's shell on one broker: a GroupMachine per
__consumer_offsets partition this broker leads, its records appended to that
partition, its timers on asyncio.

- Leadership (ReplicaManager changes): a new leader epoch of a partition of
  __consumer_offsets here loads its coordinator by replaying the partition's
  log (COORDINATOR_LOAD_IN_PROGRESS meanwhile); losing the leadership drops
  it (NOT_COORDINATOR). So group state and offsets move with the partition.
- Writes: the records of a request are appended as one batch with acks=all
  (produce.append) right where the machine made them - nothing runs in
  between, so the log has them in the order the state changed - and the
  answer waits until the high watermark passes them. An append that failed
  before reaching the log leaves the machine ahead of the log: the
  coordinator reloads from the log.
- Timers: one task per coordinator sleeps until the next session or
  revocation deadline (or until a request changes them) and expires members.
- Deleted topics (the metadata image loses them): every group's committed
  offsets of them are tombstoned, as Kafka's coordinator does, so a topic
  created again under that name starts with nothing committed. Offsets are
  keyed by topic name in Kafka's records (OffsetCommitKey has no topic id),
  so the name is what is matched. A coordinator that is loading when the
  deletion happens remembers the names and applies them once loaded; and
  every load drops the offsets of topics the image does not have (deleted
  while no broker here led the partition). The tombstones go into the next
  append of that partition, ahead of anything written after them, so the
  log keeps the order in which the state changed.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Callable, Collection, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.internal_topics import is_internal
from metadata_quorum.image import MetadataImage
from kafka_protocol.batch import end_offset
from partition_log.log import wall_clock_ms
from kafka_protocol.records import Record, encode_batch

from ..access import TopicShape, refuse_all
from ..config import BrokerConfig
from ..controller_client import ControllerClient, ControllerUnavailable
from ..errors import Error, error_name
from ..metadata import client_endpoint
from ..partition import Partition
from ..produce import AppendOrigin, append
from ..replica_manager import ReplicaChanges, ReplicaManager
from ..waiting import Signal
from .loading import replay_batches
from .machine import GroupConfig, GroupError, GroupMachine, Topics
from .placement import OFFSETS_TOPIC, partition_for
from .records import Record as GroupRecord
from .records import encode_record

log = logging.getLogger(__name__)

LOAD_CHUNK_BYTES = 1 << 20
# Before loading again after a failed append: a partition that keeps refusing
# writes (its first one may be the tombstones due after loading) is not
# reloaded in a busy loop.
RELOAD_PAUSE_S = 0.2
CREATE_TIMEOUT_S = 10.0
# Append errors whose records may be in the log anyway: the machine stays.
APPENDED_ANYWAY = (Error.REQUEST_TIMED_OUT, Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
# What a client is told when its records could not be written (as Kafka maps them).
NOT_COORDINATOR_ERRORS = (Error.NOT_LEADER_OR_FOLLOWER, Error.KAFKA_STORAGE_ERROR, Error.UNKNOWN_TOPIC_OR_PARTITION)
UNAVAILABLE_ERRORS = (Error.NOT_ENOUGH_REPLICAS, Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Error.REQUEST_TIMED_OUT)
# A transactional batch refused for its producer: the producer is told (as Kafka's
# coordinator passes these through), the machine reloads like after any refusal.
PRODUCER_ERRORS = (Error.INVALID_PRODUCER_EPOCH, Error.PRODUCER_FENCED, Error.INVALID_TXN_STATE,
                   Error.INVALID_PRODUCER_ID_MAPPING, Error.TRANSACTION_COORDINATOR_FENCED,
                   Error.TRANSACTION_ABORTABLE)


# Where TxnOffsetCommit keeps topics (it has no request-level error: a refusal is every partition's).
TXN_OFFSET_COMMIT = TopicShape(gpb.TxnOffsetCommitResponse, "topics", "name", "partition_index",
                               "topics", "name", "partition_index")


@dataclass(frozen=True)
class TxnWrite:
    """The transactional batch of a TxnOffsetCommit."""

    producer_id: int
    producer_epoch: int
    records: list[GroupRecord]


class ImageTopicIds:
    """Topic names <-> ids through the broker's metadata image (records.TopicIds)."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self.image = image

    def id_of(self, name: str) -> Optional[bytes]:
        return self.image().topic_ids.get(name)

    def name_of(self, topic_id: bytes) -> Optional[str]:
        topic = self.image().topics.get(topic_id)
        return topic.name if topic is not None else None


class Shard:
    """The coordinator of one __consumer_offsets partition, for one leader epoch."""

    def __init__(self, partition: Partition, machine: GroupMachine) -> None:
        self.partition = partition
        self.leader_epoch = partition.leader_epoch
        self.machine = machine
        self.loaded = False
        self.failed: Optional[str] = None
        self.closed = False
        self.wake = Signal()  # deadlines changed
        self.task: Optional[asyncio.Task[None]] = None
        # Topics deleted since this leadership began whose offsets' tombstones
        # are not in the log yet, and (once loaded) those tombstones.
        self.deleted: set[str] = set()
        self.pending: list[GroupRecord] = []

    def take_pending(self) -> tuple[list[GroupRecord], set[str]]:
        """The tombstones to append first, and the deletions they carry out."""
        pending, deleted = self.pending, self.deleted
        self.pending, self.deleted = [], set()
        return pending, deleted

    @property
    def index(self) -> int:
        return self.partition.index

    @property
    def current(self) -> bool:
        return (not self.closed and self.partition.is_leader and not self.partition.stopped
                and self.partition.leader_epoch == self.leader_epoch)


class GroupCoordinator:
    def __init__(self, broker_id: int, replicas: ReplicaManager, controllers: ControllerClient,
                 config: BrokerConfig, *, clock: Callable[[], int] = wall_clock_ms,
                 create_timeout_s: float = CREATE_TIMEOUT_S) -> None:
        self.broker_id = broker_id
        self.replicas = replicas
        self.controllers = controllers
        self.config = config
        self.clock = clock
        self.create_timeout_s = create_timeout_s
        self.group_config = GroupConfig(session_timeout_ms=config.group_consumer_session_timeout_ms,
                                        heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
                                        offset_metadata_max_bytes=config.offset_metadata_max_bytes)
        self.ids = ImageTopicIds(lambda: self.replicas.image)
        self.shards: dict[int, Shard] = {}
        self._creating: Optional[asyncio.Future[None]] = None
        self._topics_cache: tuple[int, int, dict[str, int], dict[str, int]] = (-1, -1, {}, {})

    # -- leadership ------------------------------------------------------------------------------
    def on_replica_changes(self, changes: ReplicaChanges) -> None:
        for partition in changes.leaders:
            if partition.topic == OFFSETS_TOPIC:
                self._unload(partition.index)
                shard = self.shards[partition.index] = Shard(partition, GroupMachine(self.group_config))
                shard.task = asyncio.create_task(self._run(shard), name=f"group-coordinator-{partition.index}")
        for partition in changes.followers:
            if partition.topic == OFFSETS_TOPIC:
                self._unload(partition.index)
        for topic, index in changes.stopped:
            if topic == OFFSETS_TOPIC:
                self._unload(index)

    def on_topics_removed(self, names: Collection[str]) -> None:
        """The metadata image no longer has these topics: drop every group's
        offsets of them (written by each coordinator's next append)."""
        if not names:
            return
        for shard in self.shards.values():
            if not shard.current:
                continue
            shard.deleted.update(names)
            if shard.loaded:
                shard.pending += shard.machine.delete_offsets(names)
                shard.wake.fire()
            # else: _load applies shard.deleted when it is done

    def _unload(self, index: int) -> None:
        shard = self.shards.pop(index, None)
        if shard is not None:
            shard.closed = True
            if shard.task is not None:
                shard.task.cancel()
            log.info("broker %d: no longer the group coordinator of %s-%d", self.broker_id, OFFSETS_TOPIC, index)

    async def stop(self) -> None:
        shards = list(self.shards.values())
        for index in list(self.shards):
            self._unload(index)
        await asyncio.gather(*(s.task for s in shards if s.task is not None), return_exceptions=True)

    async def _run(self, shard: Shard, pause_s: float = 0.0) -> None:
        try:
            await asyncio.sleep(pause_s)
            await self._load(shard)
            await self._write(shard, [])  # the offsets of topics deleted before or while loading
            while not shard.closed:
                wake = shard.wake.wait()
                deadline = shard.machine.next_deadline()
                delay = None if deadline is None else max(deadline - self.clock(), 0) / 1000
                if shard.pending:
                    delay = 0  # tombstones of a deleted topic's offsets, made while this task was writing
                try:
                    await asyncio.wait_for(asyncio.shield(wake), delay)
                except asyncio.TimeoutError:
                    pass
                if shard.closed:
                    return
                records = shard.machine.expire(self.clock(), self.topics())
                if records or shard.pending:
                    await self._write(shard, records)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken coordinator answers, it does not take the broker down
            shard.failed = f"{type(exc).__name__}: {exc}"
            log.exception("broker %d: the group coordinator of %s-%d failed", self.broker_id, OFFSETS_TOPIC,
                          shard.index)

    async def _load(self, shard: Shard) -> None:
        """Replay the partition's log into a fresh machine, yielding between chunks."""
        shard.loaded = False
        shard.machine = GroupMachine(self.group_config)
        shard.pending = []  # the new machine is built from the log: shard.deleted is applied again below
        lg = shard.partition.log
        started, count = self.clock(), 0
        where = f"{OFFSETS_TOPIC}-{shard.index}"
        # Until the log end, read again after each pass: a marker appended while
        # loading is in the log (on_txn_completed ignores a shard still loading).
        offset = lg.log_start_offset
        while offset < lg.log_end_offset:
            read_from = offset
            for data in lg.iter_reads(offset, LOAD_CHUNK_BYTES):
                count += replay_batches(shard.machine, data, self.ids, where)
                offset = end_offset(data)
                await asyncio.sleep(0)
                if shard.closed:
                    return
            if offset == read_from:
                break  # nothing readable there: a log whose end is past its last batch
        shard.machine.arm_timers(self.clock())
        # Nothing awaits from here on: a deletion seen from now on finds the shard loaded.
        image = self.replicas.image
        gone = {t for t in shard.machine.offset_topics() if t not in image.topic_ids} | shard.deleted
        shard.pending = shard.machine.delete_offsets(gone)
        if shard.pending:
            log.info("broker %d: %s-%d: removing %d committed offsets of deleted topics %s", self.broker_id,
                     OFFSETS_TOPIC, shard.index, len(shard.pending), sorted({r[0].topic for r in shard.pending}))
        shard.loaded = True
        log.info("broker %d: group coordinator of %s-%d loaded in epoch %d: %d records, %d groups, %d ms",
                 self.broker_id, OFFSETS_TOPIC, shard.index, shard.leader_epoch, count,
                 len(shard.machine.state.groups), self.clock() - started)

    # -- writes ----------------------------------------------------------------------------------
    async def _write(self, shard: Shard, records: list[GroupRecord], txn: Optional[TxnWrite] = None) -> int:
        """Append and wait for the high watermark; the error code for the client.
        Tombstones of deleted topics' offsets still pending go first. With
        `txn`, its records follow as the producer's transactional batch, in
        the same append (so nothing the machine did later lands in between)."""
        pending, deleted = shard.take_pending()
        records = pending + records
        if not records and txn is None:
            return Error.NONE
        now = self.clock()
        batches = encode_batch([Record(*encode_record(r, self.ids), timestamp=now) for r in records]) if records \
            else b""
        if txn is not None:
            # Kafka's coordinator writes no sequence: the partition does not check it for its own writes.
            batches += encode_batch([Record(*encode_record(r, self.ids), timestamp=now) for r in txn.records],
                                    producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                                    base_sequence=-1, transactional=True)
        # From the coordinator: the producer's sequences do not apply to it (Kafka's AppendOrigin.COORDINATOR).
        result = await append(self.replicas, OFFSETS_TOPIC, shard.index, batches, -1,
                              self.config.offsets_commit_timeout_ms, origin=AppendOrigin.COORDINATOR)
        if result.error == Error.NONE:
            return Error.NONE
        log.warning("%s-%d: appending %d group records failed: %s %s", OFFSETS_TOPIC, shard.index, len(records),
                    error_name(result.error), result.message)
        if result.error not in APPENDED_ANYWAY and shard.current and shard.task is not None:
            # The machine holds changes the log does not: start again from the log
            # (which does not have these deletions either).
            shard.deleted |= deleted
            shard.task.cancel()
            shard.loaded = False
            shard.task = asyncio.create_task(self._run(shard, RELOAD_PAUSE_S), name=f"group-coordinator-{shard.index}")
        if result.error in PRODUCER_ERRORS:
            return result.error
        if result.error in NOT_COORDINATOR_ERRORS:
            return Error.NOT_COORDINATOR
        if result.error in UNAVAILABLE_ERRORS:
            return Error.COORDINATOR_NOT_AVAILABLE
        return Error.UNKNOWN_SERVER_ERROR

    # -- routing ---------------------------------------------------------------------------------
    def offsets_partitions(self) -> int:
        topic = self.replicas.image.topic(OFFSETS_TOPIC)
        return len(topic.partitions) if topic is not None and topic.partitions else \
            self.config.offsets_topic_num_partitions

    def shard_for(self, group_id: str) -> Shard:
        if not group_id:
            raise GroupError(Error.INVALID_GROUP_ID, "the group id is empty")
        index = partition_for(group_id, self.offsets_partitions())
        shard = self.shards.get(index)
        if shard is None or not shard.current:
            raise GroupError(Error.NOT_COORDINATOR,
                             f"broker {self.broker_id} does not coordinate {OFFSETS_TOPIC}-{index}")
        if shard.failed is not None:
            raise GroupError(Error.COORDINATOR_NOT_AVAILABLE, shard.failed)
        if not shard.loaded:
            raise GroupError(Error.COORDINATOR_LOAD_IN_PROGRESS, f"{OFFSETS_TOPIC}-{index} is loading")
        return shard

    def topics(self) -> Topics:
        """The cluster's topics (internal ones aside) and their partition counts: what groups subscribe to."""
        return self._topic_counts()[1]

    def all_topics(self) -> Topics:
        """Every topic of the cluster and its partition count: what offsets may be committed for."""
        return self._topic_counts()[0]

    def _topic_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        image = self.replicas.image
        if self._topics_cache[:2] != (id(image), image.offset):
            every = {t.name: len(t.partitions) for t in image.topics.values()}
            subscribable = {name: n for name, n in every.items() if not is_internal(name)}
            self._topics_cache = (id(image), image.offset, every, subscribable)
        return self._topics_cache[2], self._topics_cache[3]

    # -- requests --------------------------------------------------------------------------------
    async def heartbeat(self, request: gpb.ConsumerGroupHeartbeatRequest, client_id: str = "",
                        client_host: str = "") -> gpb.ConsumerGroupHeartbeatResponse:
        try:
            shard = self.shard_for(request.group_id)
        except GroupError as exc:
            return gpb.ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message)
        response, records = shard.machine.heartbeat(request, self.clock(), self.topics(), client_id, client_host)
        shard.wake.fire()
        error = await self._write(shard, records)
        if error != Error.NONE:
            return gpb.ConsumerGroupHeartbeatResponse(error_code=error, error_message="the group records were not written")
        return response

    async def commit(self, request: gpb.OffsetCommitRequest) -> gpb.OffsetCommitResponse:
        try:
            shard = self.shard_for(request.group_id)
        except GroupError as exc:
            response = gpb.OffsetCommitResponse(error_code=exc.code)
            for topic in request.topics:
                response.topics.add(name=topic.name, partitions=[gpb.OffsetCommitResponse.Partition(
                    partition_index=p.partition_index, error_code=exc.code) for p in topic.partitions])
            return response
        response, records = shard.machine.commit(request, self.clock(), self.all_topics())
        error = await self._write(shard, records)
        if error != Error.NONE:
            response.error_code = error
            for topic in response.topics:
                for p in topic.partitions:
                    if p.error_code == Error.NONE:
                        p.error_code = error
        return response

    async def txn_offset_commit(self, request: gpb.TxnOffsetCommitRequest) -> gpb.TxnOffsetCommitResponse:
        """Kafka's TxnOffsetCommit: checked by the machine, verified with the
        transaction coordinator (KIP-890: the group's partition must be in the
        producer's transaction, by AddOffsetsToTxn), then appended as one
        transactional batch with acks=all; an error is every partition's."""
        try:
            shard = self.shard_for(request.group_id)
            verifier = getattr(self.replicas, "txn_verifier", None)
            if verifier is not None and request.transactional_id and request.producer_id >= 0:
                code = await verifier.verify(request.transactional_id, request.producer_id, request.producer_epoch,
                                             OFFSETS_TOPIC, shard.index)
                if code != Error.NONE:
                    raise GroupError(code, "the group's partition is not in the producer's transaction")
                shard = self.shard_for(request.group_id)  # the verification awaited: still here?
        except GroupError as exc:
            return refuse_all(request, TXN_OFFSET_COMMIT, exc.code)
        response, records, txn_records = shard.machine.txn_offset_commit(request, self.clock(), self.all_topics())
        txn = TxnWrite(request.producer_id, request.producer_epoch, txn_records) if txn_records else None
        error = await self._write(shard, records, txn)
        if error != Error.NONE:
            for topic in response.topics:
                for p in topic.partitions:
                    if p.error_code == Error.NONE:
                        p.error_code = error
        return response

    def on_txn_completed(self, partition_index: int, producer_id: int, committed: bool) -> None:
        """A COMMIT/ABORT marker of `producer_id` was just appended to
        __consumer_offsets-`partition_index` here (called by the marker writer
        in the same event-loop step): its pending offsets are committed or
        dropped, after every record before the marker and before any after it.
        A shard still loading reads the marker from the log instead."""
        shard = self.shards.get(partition_index)
        if shard is None or not shard.current or not shard.loaded:
            return
        shard.machine.complete_txn(producer_id, committed)

    def fetch(self, request: gpb.OffsetFetchRequest) -> gpb.OffsetFetchResponse:
        try:
            return self.shard_for(request.group_id).machine.fetch(request)
        except GroupError as exc:
            return gpb.OffsetFetchResponse(error_code=exc.code)

    def describe(self, request: gpb.ConsumerGroupDescribeRequest) -> gpb.ConsumerGroupDescribeResponse:
        response = gpb.ConsumerGroupDescribeResponse()
        for group_id in request.group_ids:
            try:
                response.groups.append(self.shard_for(group_id).machine.describe(group_id))
            except GroupError as exc:
                response.groups.add(group_id=group_id, error_code=exc.code, error_message=exc.message)
        return response

    async def delete(self, request: gpb.DeleteGroupsRequest) -> gpb.DeleteGroupsResponse:
        response = gpb.DeleteGroupsResponse()
        for group_id in request.group_ids:
            try:
                shard = self.shard_for(group_id)
            except GroupError as exc:
                response.results.add(group_id=group_id, error_code=exc.code)
                continue
            answer, records = shard.machine.delete([group_id])
            error = await self._write(shard, records)
            response.results.add(group_id=group_id, error_code=error or answer.results[0].error_code)
        return response

    def list_groups(self, request: gpb.ListGroupsRequest) -> gpb.ListGroupsResponse:
        response = gpb.ListGroupsResponse()
        for _, shard in sorted(self.shards.items()):
            if shard.current and shard.loaded:
                response.groups.extend(shard.machine.list_groups(request.states_filter, self.broker_id))
            elif shard.current and shard.failed is None:
                response.error_code = Error.COORDINATOR_LOAD_IN_PROGRESS
        return response

    # -- FindCoordinator -------------------------------------------------------------------------
    async def find_coordinator(self, request: gpb.FindCoordinatorRequest, listener: str,
                               ) -> gpb.FindCoordinatorResponse:
        response = gpb.FindCoordinatorResponse()
        if request.key_type != 0:
            for key in request.keys:
                response.coordinators.add(key=key, node_id=-1, error_code=Error.INVALID_REQUEST,
                                          error_message=f"key type {request.key_type}: only groups (0) have coordinators")
            return response
        if self.replicas.image.topic(OFFSETS_TOPIC) is None and request.keys:
            await self._create_offsets_topic()
        image = self.replicas.image
        topic = image.topic(OFFSETS_TOPIC)
        for key in request.keys:
            out = response.coordinators.add(key=key, node_id=-1)
            if not key:
                out.error_code, out.error_message = Error.INVALID_GROUP_ID, "the group id is empty"
                continue
            state = topic.partitions.get(partition_for(key, len(topic.partitions))) if topic else None
            broker = image.brokers.get(state.leader) if state is not None else None
            endpoint = client_endpoint(broker, listener) if broker is not None and not broker.fenced else None
            if endpoint is None:
                out.error_code = Error.COORDINATOR_NOT_AVAILABLE
                out.error_message = f"{OFFSETS_TOPIC} has no leader for this group yet"
                continue
            out.node_id, out.host, out.port = broker.broker_id, endpoint.host, endpoint.port
        return response

    async def _create_offsets_topic(self) -> None:
        """CreateTopics through the active controller, once at a time; any
        failure is logged and the caller answers COORDINATOR_NOT_AVAILABLE."""
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())
        try:
            await asyncio.wait_for(asyncio.shield(self._creating), self.create_timeout_s)
        except asyncio.TimeoutError:
            pass

    async def _create(self) -> None:
        request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
            name=OFFSETS_TOPIC, num_partitions=self.config.offsets_topic_num_partitions,
            replication_factor=self.config.offsets_topic_replication_factor,
            configs=[cpb.ConfigEntry(name="cleanup.policy", value="compact")])])
        try:
            response = await self.controllers.call("CreateTopics", request, timeout_s=self.create_timeout_s)
        except ControllerUnavailable as exc:
            log.warning("broker %d: cannot create %s: %s", self.broker_id, OFFSETS_TOPIC, exc)
            return
        results = [(r.error_code, r.error_message) for r in response.topics]
        if response.error_code or any(code not in (Error.NONE, Error.TOPIC_ALREADY_EXISTS) for code, _ in results):
            log.warning("broker %d: creating %s failed: %s %s", self.broker_id, OFFSETS_TOPIC,
                        response.error_code, results)
        else:
            log.info("broker %d: created %s (%d partitions, replication factor %d)", self.broker_id, OFFSETS_TOPIC,
                     self.config.offsets_topic_num_partitions, self.config.offsets_topic_replication_factor)

