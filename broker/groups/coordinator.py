"""The group coordinator's shell on one broker: a GroupMachine per
__consumer_offsets partition this broker leads, its records appended to that
partition, its timers on asyncio. Shards, leadership, loading and reloading
after a refused append are the shell both coordinators share
(broker/coordinator_shards.py).

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
  Deadlines run on the monotonic clock (`timer`), so a wall clock the
  testbed jumps expires no member and keeps none alive; the wall clock
  (`clock`) only stamps what is written (record and commit timestamps, a
  classic group's state timestamp).
- Classic groups (JoinGroup/SyncGroup): a request whose answer waits for
  other members (or a timer) holds a future under a token; whatever call of
  the machine makes the answer (another member's request, the timer task)
  resolves it once that call's records are written (or with the write's
  error). A shard that stops (leadership lost, or a reload after a refused
  append) answers every waiting request NOT_COORDINATOR: the clients find
  the coordinator again and rejoin.
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
import itertools
import logging
from dataclasses import dataclass
from typing import Callable, Collection, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.internal_topics import is_internal
from metadata_quorum.image import MetadataImage
from partition_log.clock import monotonic_ms
from partition_log.log import Clock, wall_clock_ms
from kafka_protocol.records import Record, encode_batch

from ..access import TopicShape, refuse_all
from ..config import BrokerConfig
from ..controller_client import ControllerClient
from ..coordinator_shards import Shard, ShardedCoordinator, client_error
from ..coordinator_topics import InternalTopicCreator, coordinator_of
from ..errors import Error
from ..partition import Partition
from ..replica_manager import ReplicaManager
from .loading import replay_batches
from .classic import Answer, ClassicConfig, Token
from .machine import GroupConfig, GroupError, GroupMachine, Topics
from .placement import OFFSETS_TOPIC, partition_for
from .records import Record as GroupRecord
from .records import encode_record

log = logging.getLogger(__name__)

CREATE_TIMEOUT_S = 10.0
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


class GroupShard(Shard[GroupMachine]):
    """The coordinator of one __consumer_offsets partition, for one leader epoch."""

    def __init__(self, partition: Partition, machine: GroupMachine) -> None:
        super().__init__(partition, machine)
        # Topics deleted since this leadership began whose offsets' tombstones
        # are not in the log yet, and (once loaded) those tombstones.
        self.deleted: set[str] = set()
        self.pending: list[GroupRecord] = []
        self.waiting: dict[Token, asyncio.Future] = {}  # classic requests waiting for their answer

    def settle(self, answers: list[Answer], error: int) -> None:
        """Resolve the waiting requests these answers are for (all with
        `error` instead when the records made with them were not written)."""
        for token, answer in answers:
            future = self.waiting.pop(token, None)
            if future is None or future.done():
                continue
            if error != Error.NONE:
                answer = type(answer)(error_code=error)
            future.set_result(answer)

    def fail_waiting(self, error: int) -> None:
        waiting, self.waiting = self.waiting, {}
        for token, future in waiting.items():
            if not future.done():
                future.set_exception(GroupError(error, "the coordinator stopped"))

    def take_pending(self) -> tuple[list[GroupRecord], set[str]]:
        """The tombstones to append first, and the deletions they carry out."""
        pending, deleted = self.pending, self.deleted
        self.pending, self.deleted = [], set()
        return pending, deleted


class GroupCoordinator(ShardedCoordinator[GroupShard]):
    topic = OFFSETS_TOPIC
    role = "group coordinator"

    def __init__(self, broker_id: int, replicas: ReplicaManager, controllers: ControllerClient,
                 config: BrokerConfig, *, clock: Clock = wall_clock_ms, timer: Clock = monotonic_ms,
                 create_timeout_s: float = CREATE_TIMEOUT_S) -> None:
        super().__init__(broker_id, replicas)
        self.controllers = controllers
        self.config = config
        self.clock = clock  # the wall clock: what is written
        self.timer = timer  # the monotonic clock: every deadline
        self.create_timeout_s = create_timeout_s
        self.group_config = GroupConfig(session_timeout_ms=config.group_consumer_session_timeout_ms,
                                        heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
                                        offset_metadata_max_bytes=config.offset_metadata_max_bytes,
                                        classic=ClassicConfig(
                                            min_session_timeout_ms=config.group_min_session_timeout_ms,
                                            max_session_timeout_ms=config.group_max_session_timeout_ms,
                                            initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                                            max_record_bytes=config.log.max_message_bytes),
                                        migration_policy=config.group_consumer_migration_policy)
        self._tokens = itertools.count(1)
        self.ids = ImageTopicIds(lambda: self.replicas.image)
        self.creator = InternalTopicCreator(broker_id, controllers, create_timeout_s)
        self._topics_cache: tuple[int, int, dict[str, int], dict[str, int]] = (-1, -1, {}, {})

    # -- leadership ------------------------------------------------------------------------------
    def new_shard(self, partition: Partition) -> GroupShard:
        return GroupShard(partition, GroupMachine(self.group_config))

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

    async def run_shard(self, shard: GroupShard) -> None:
        try:
            await self._run_shard(shard)
        finally:  # stopped, failed or reloading: the answers waited for will not come from this machine
            shard.fail_waiting(Error.NOT_COORDINATOR)

    async def _run_shard(self, shard: GroupShard) -> None:
        await self._load(shard)
        await self._write(shard, [])  # the offsets of topics deleted before or while loading
        while not shard.closed:
            wake = shard.wake.wait()
            deadline = shard.machine.next_deadline()
            delay = None if deadline is None else max(deadline - self.timer(), 0) / 1000
            if shard.pending:
                delay = 0  # tombstones of a deleted topic's offsets, made while this task was writing
            try:
                await asyncio.wait_for(asyncio.shield(wake), delay)
            except asyncio.TimeoutError:
                pass
            if shard.closed:
                return
            records = shard.machine.expire(self.timer(), self.topics(), wall_ms=self.clock())
            answers = shard.machine.take_answers()
            error = await self._write(shard, records) if records or shard.pending else Error.NONE
            shard.settle(answers, error)

    async def _load(self, shard: GroupShard) -> None:
        """Replay the partition's log into a fresh machine, yielding between chunks
        (to the log end: a marker appended while loading is in the log, and
        on_txn_completed ignores a shard still loading)."""
        shard.loaded = False
        shard.machine = GroupMachine(self.group_config)
        shard.pending = []  # the new machine is built from the log: shard.deleted is applied again below
        started, count = self.timer(), 0
        where = f"{OFFSETS_TOPIC}-{shard.index}"
        async for data in self.log_chunks(shard):
            count += replay_batches(shard.machine, data, self.ids, where)
        if shard.closed:
            return
        shard.machine.arm_timers(self.timer())
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
                 len(shard.machine.state.groups), self.timer() - started)

    # -- writes ----------------------------------------------------------------------------------
    async def _write(self, shard: GroupShard, records: list[GroupRecord], txn: Optional[TxnWrite] = None) -> int:
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
        # From the coordinator (AppendOrigin.COORDINATOR): the producer's sequences do not apply to it.
        # A refused append reloads the shard from the log, which does not have these deletions either.
        result = await self.append(shard, batches, self.config.offsets_commit_timeout_ms,
                                   f"{len(records)} group records", on_refused=lambda: shard.deleted.update(deleted))
        if result.error == Error.NONE or result.error in PRODUCER_ERRORS:
            return result.error
        return client_error(result.error)

    # -- routing ---------------------------------------------------------------------------------
    def offsets_partitions(self) -> int:
        return self.partitions_of(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions)

    def shard_for(self, group_id: str) -> GroupShard:
        if not group_id:
            raise GroupError(Error.INVALID_GROUP_ID, "the group id is empty")
        return self.shard_at(partition_for(group_id, self.offsets_partitions()), GroupError)

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
        response, records = shard.machine.heartbeat(request, self.timer(), self.topics(), client_id, client_host,
                                                    wall_ms=self.clock())
        answers = shard.machine.take_answers()  # a classic group's waiting requests its upgrade ended
        shard.wake.fire()
        error = await self._write(shard, records)
        shard.settle(answers, error)
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

    # -- the classic group protocol ---------------------------------------------------------------
    async def _classic(self, group_id: str, call, refusal):
        """Run `call(machine, token)` on the group's shard (it returns the
        records to write) and wait for the answer under the token."""
        try:
            shard = self.shard_for(group_id)
        except GroupError as exc:
            return refusal(exc.code)
        token = next(self._tokens)
        future = shard.waiting[token] = asyncio.get_running_loop().create_future()
        try:
            records = call(shard.machine, token)
            answers = shard.machine.take_answers()
            shard.wake.fire()  # deadlines changed
            shard.settle(answers, await self._write(shard, records))
            return await future
        except GroupError as exc:
            return refusal(exc.code)
        finally:
            shard.waiting.pop(token, None)

    async def join_group(self, request: gpb.JoinGroupRequest, client_id: str = "",
                         client_host: str = "") -> gpb.JoinGroupResponse:
        return await self._classic(
            request.group_id,
            lambda machine, token: machine.join_group(request, token, self.timer(), client_id, client_host,
                                                      self.topics(), wall_ms=self.clock()),
            lambda code: gpb.JoinGroupResponse(error_code=code, member_id=request.member_id, generation_id=-1))

    async def sync_group(self, request: gpb.SyncGroupRequest) -> gpb.SyncGroupResponse:
        return await self._classic(request.group_id,
                                   lambda machine, token: machine.sync_group(request, token, self.timer(),
                                                                             wall_ms=self.clock()),
                                   lambda code: gpb.SyncGroupResponse(error_code=code))

    def heartbeat_classic(self, request: gpb.HeartbeatRequest) -> gpb.HeartbeatResponse:
        try:
            shard = self.shard_for(request.group_id)
        except GroupError as exc:
            return gpb.HeartbeatResponse(error_code=exc.code)
        response = shard.machine.heartbeat_classic(request, self.timer())
        shard.wake.fire()
        return response

    async def leave_group(self, request: gpb.LeaveGroupRequest) -> gpb.LeaveGroupResponse:
        try:
            shard = self.shard_for(request.group_id)
        except GroupError as exc:
            return gpb.LeaveGroupResponse(error_code=exc.code)
        response, records = shard.machine.leave_group(request, self.timer(), self.topics(), wall_ms=self.clock())
        answers = shard.machine.take_answers()  # other members' joins the leave completed
        shard.wake.fire()
        error = await self._write(shard, records)
        shard.settle(answers, error)
        if error != Error.NONE:
            response.error_code = error
        return response

    def describe_groups(self, request: gpb.DescribeGroupsRequest) -> gpb.DescribeGroupsResponse:
        response = gpb.DescribeGroupsResponse()
        for group_id in request.group_ids:
            try:
                response.groups.append(self.shard_for(group_id).machine.describe_groups(group_id))
            except GroupError as exc:
                response.groups.add(group_id=group_id, error_code=exc.code, group_state="Dead")
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
            await self.creator.create(cpb.CreateTopicsRequest.CreatableTopic(
                name=OFFSETS_TOPIC, num_partitions=self.config.offsets_topic_num_partitions,
                replication_factor=self.config.offsets_topic_replication_factor,
                configs=[cpb.ConfigEntry(name="cleanup.policy", value="compact")]))
        for key in request.keys:
            out = response.coordinators.add(key=key, node_id=-1)
            if not key:
                out.error_code, out.error_message = Error.INVALID_GROUP_ID, "the group id is empty"
            else:
                coordinator_of(self.replicas.image, OFFSETS_TOPIC, key, listener, out)
        return response
