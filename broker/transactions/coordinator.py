"""The transaction coordinator's shell on one broker: a TxnMachine per
__transaction_state partition this broker leads, its records appended to
that partition, its timer and marker writing on asyncio.

- Leadership (ReplicaManager changes): a new leader epoch of a partition of
  __transaction_state here loads its machine by replaying the log
  (COORDINATOR_LOAD_IN_PROGRESS meanwhile), then resumes the markers of every
  Prepare* transaction; losing the leadership drops it (NOT_COORDINATOR).
- Writes: a request's records are appended with acks=all (produce.append)
  right where the machine made them, and the answer waits for the high
  watermark. An append that failed before reaching the log leaves the
  machine ahead of the log: the shard reloads from the log.
- Markers: once a Prepare* record is durable, markers.MarkerWriter writes
  the markers with the shard's leader epoch as coordinator epoch; then the
  Complete* record is appended.
- Timer: one task per shard wakes at the next transaction timeout or id
  expiration (at most every transaction.abort.timed.out.transaction.cleanup
  .interval.ms), aborts timed-out transactions (epoch bumped) and tombstones
  expired ids.
- Producer ids come from `new_producer_id` (the broker's ProducerIdManager),
  asked for only when the machine raises NeedProducerId.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Optional, TypeVar

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import transactions_pb2 as tpb
from kafka_protocol.coordinator_placement import partition_for
from kafka_protocol.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafka_protocol.records import Record, encode_batch, iter_batches
from kafka_protocol.schema_types import SchemaError
from partition_log.log import wall_clock_ms

from ..config import BrokerConfig
from ..controller_client import ControllerClient
from ..coordinator_topics import InternalTopicCreator, coordinator_of
from ..errors import BrokerError, Error, error_name
from ..partition import Partition
from ..produce import append
from ..replica_manager import ReplicaChanges, ReplicaManager
from ..waiting import Signal
from .machine import NeedProducerId, TxnConfig, TxnError, TxnMachine
from .markers import MarkerWriter
from .records import STATE_BY_NAME, TopicPartition, decode_record, encode_record
from .records import Record as TxnRecord

log = logging.getLogger(__name__)

TXN_TOPIC = TRANSACTION_STATE_TOPIC
LOAD_CHUNK_BYTES = 1 << 20
RELOAD_PAUSE_S = 0.2
CREATE_TIMEOUT_S = 10.0
APPENDED_ANYWAY = (Error.REQUEST_TIMED_OUT, Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
NOT_COORDINATOR_ERRORS = (Error.NOT_LEADER_OR_FOLLOWER, Error.KAFKA_STORAGE_ERROR, Error.UNKNOWN_TOPIC_OR_PARTITION)

T = TypeVar("T")


class Shard:
    """The coordinator of one __transaction_state partition, for one leader epoch."""

    def __init__(self, partition: Partition, machine: TxnMachine) -> None:
        self.partition = partition
        self.leader_epoch = partition.leader_epoch
        self.machine = machine
        self.loaded = False
        self.failed: Optional[str] = None
        self.closed = False
        self.wake = Signal()
        self.task: Optional[asyncio.Task[None]] = None
        self.markers: set[asyncio.Task[None]] = set()

    @property
    def index(self) -> int:
        return self.partition.index

    @property
    def current(self) -> bool:
        return (not self.closed and self.partition.is_leader and not self.partition.stopped
                and self.partition.leader_epoch == self.leader_epoch)

    def cancel(self) -> list[asyncio.Task[None]]:
        tasks = [t for t in (self.task, *self.markers) if t is not None]
        for task in tasks:
            task.cancel()
        self.markers = set()
        return tasks


class TransactionCoordinator:
    def __init__(self, broker_id: int, replicas: ReplicaManager, controllers: ControllerClient,
                 config: BrokerConfig, *, new_producer_id: Callable[[], Awaitable[int]], markers: MarkerWriter,
                 append_timeout_ms: int = 30000, clock: Callable[[], int] = wall_clock_ms,
                 create_timeout_s: float = CREATE_TIMEOUT_S) -> None:
        self.broker_id = broker_id
        self.replicas = replicas
        self.controllers = controllers
        self.config = config
        self.new_producer_id = new_producer_id
        self.markers = markers
        self.append_timeout_ms = append_timeout_ms
        self.clock = clock
        self.txn_config = TxnConfig(max_timeout_ms=config.transaction_max_timeout_ms,
                                    id_expiration_ms=config.transactional_id_expiration_ms)
        self.shards: dict[int, Shard] = {}
        self.creator = InternalTopicCreator(broker_id, controllers, create_timeout_s)

    # -- leadership ------------------------------------------------------------------------------
    def on_replica_changes(self, changes: ReplicaChanges) -> None:
        for partition in changes.leaders:
            if partition.topic == TXN_TOPIC:
                self._unload(partition.index)
                shard = self.shards[partition.index] = Shard(partition, TxnMachine(self.txn_config))
                shard.task = asyncio.create_task(self._run(shard), name=f"txn-coordinator-{partition.index}")
        for partition in changes.followers:
            if partition.topic == TXN_TOPIC:
                self._unload(partition.index)
        for topic, index in changes.stopped:
            if topic == TXN_TOPIC:
                self._unload(index)

    def _unload(self, index: int) -> list[asyncio.Task[None]]:
        shard = self.shards.pop(index, None)
        if shard is None:
            return []
        shard.closed = True
        log.info("broker %d: no longer the transaction coordinator of %s-%d", self.broker_id, TXN_TOPIC, index)
        return shard.cancel()

    async def stop(self) -> None:
        tasks = [t for index in list(self.shards) for t in self._unload(index)]
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, shard: Shard, pause_s: float = 0.0) -> None:
        try:
            await asyncio.sleep(pause_s)
            await self._load(shard)
            for job in shard.machine.marker_jobs():
                self._start_markers(shard, [(job.transactional_id, shard.machine.describe(job.transactional_id))])
            interval_ms = self.config.transaction_abort_timed_out_cleanup_interval_ms
            while not shard.closed:
                now = self.clock()
                deadline = shard.machine.next_deadline()
                delay_ms = interval_ms if deadline is None else min(max(deadline - now, 0), interval_ms)
                try:
                    await asyncio.wait_for(asyncio.shield(shard.wake.wait()), delay_ms / 1000)
                except asyncio.TimeoutError:
                    pass
                if shard.closed:
                    return
                for tid in shard.machine.timed_out(self.clock()):
                    try:
                        records = await self._with_producer_id(
                            lambda fresh, tid=tid: shard.machine.abort_timed_out(tid, self.clock(),
                                                                                 fresh_producer_id=fresh))
                    except TxnError as exc:  # no producer id yet: the next round tries again
                        log.warning("%s-%d: cannot abort %r yet: %s", TXN_TOPIC, shard.index, tid, exc.message)
                        continue
                    if records:
                        log.info("%s-%d: aborting the transaction of %r on its timeout", TXN_TOPIC, shard.index, tid)
                    await self._write(shard, records)
                await self._write(shard, shard.machine.expire_ids(self.clock()))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken coordinator answers, it does not take the broker down
            shard.failed = f"{type(exc).__name__}: {exc}"
            log.exception("broker %d: the transaction coordinator of %s-%d failed", self.broker_id, TXN_TOPIC,
                          shard.index)

    async def _load(self, shard: Shard) -> None:
        shard.loaded = False
        shard.machine = TxnMachine(self.txn_config)
        lg = shard.partition.log
        started, count = self.clock(), 0
        for data in lg.iter_reads(lg.log_start_offset, LOAD_CHUNK_BYTES):
            for batch in iter_batches(data):
                if batch.header.is_control:
                    continue
                for record in batch.records:
                    try:
                        decoded = decode_record(record.key, record.value)
                    except SchemaError as exc:
                        log.warning("%s-%d offset %d: skipping an undecodable record: %s", TXN_TOPIC, shard.index,
                                    record.offset, exc)
                        continue
                    if decoded is not None:
                        shard.machine.replay(decoded)
                        count += 1
            await asyncio.sleep(0)
            if shard.closed:
                return
        shard.loaded = True
        log.info("broker %d: transaction coordinator of %s-%d loaded in epoch %d: %d records, %d ids, %d ms",
                 self.broker_id, TXN_TOPIC, shard.index, shard.leader_epoch, count, len(shard.machine.txns),
                 self.clock() - started)

    # -- writes ----------------------------------------------------------------------------------
    async def _with_producer_id(self, decide: Callable[[Optional[int]], T]) -> T:
        """The machine's decision, with a fresh producer id when it needs one
        (TxnError with the allocator's code when none came: retriable)."""
        try:
            return decide(None)
        except NeedProducerId:
            pass
        try:
            fresh = await self.new_producer_id()
        except BrokerError as exc:
            raise TxnError(exc.error, exc.message) from None
        return decide(fresh)

    async def _write(self, shard: Shard, records: list[TxnRecord]) -> int:
        """Append and wait for the high watermark; the error code for the client.
        Markers start for every Prepare* record once it is durable."""
        if not records:
            return Error.NONE
        now = self.clock()
        batch = encode_batch([Record(*encode_record(r), timestamp=now) for r in records])
        result = await append(self.replicas, TXN_TOPIC, shard.index, batch, -1, self.append_timeout_ms)
        if result.error == Error.NONE:
            self._start_markers(shard, records)
            return Error.NONE
        log.warning("%s-%d: appending %d transaction records failed: %s %s", TXN_TOPIC, shard.index, len(records),
                    error_name(result.error), result.message)
        if result.error not in APPENDED_ANYWAY and shard.current and shard.task is not None:
            shard.cancel()
            shard.loaded = False
            shard.task = asyncio.create_task(self._run(shard, RELOAD_PAUSE_S), name=f"txn-coordinator-{shard.index}")
        if result.error in NOT_COORDINATOR_ERRORS:
            return Error.NOT_COORDINATOR
        return Error.COORDINATOR_NOT_AVAILABLE

    def _start_markers(self, shard: Shard, records: list[TxnRecord]) -> None:
        for record in records:
            job = TxnMachine.marker_job(record)
            if job is not None and shard.current:
                task = asyncio.create_task(self._markers(shard, job), name=f"txn-markers-{job.transactional_id}")
                shard.markers.add(task)
                task.add_done_callback(shard.markers.discard)

    async def _markers(self, shard: Shard, job) -> None:
        try:
            if await self.markers.write(job, shard.leader_epoch, lambda: shard.current):
                await self._write(shard, shard.machine.complete(job, self.clock()))
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the next load resumes the markers
            log.exception("%s-%d: writing the markers of %r failed", TXN_TOPIC, shard.index, job.transactional_id)

    # -- routing ---------------------------------------------------------------------------------
    def partitions_of(self, topic: str, default: int) -> int:
        state = self.replicas.image.topic(topic)
        return len(state.partitions) if state is not None and state.partitions else default

    def coordinator_partition(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partitions_of(
            TXN_TOPIC, self.config.transaction_state_log_num_partitions))

    def shard_for(self, transactional_id: str) -> Shard:
        if not transactional_id:
            raise TxnError(Error.INVALID_REQUEST, "the transactional id is empty")
        shard = self.shards.get(self.coordinator_partition(transactional_id))
        if shard is None or not shard.current:
            raise TxnError(Error.NOT_COORDINATOR, f"broker {self.broker_id} is not the coordinator of "
                                                  f"{transactional_id!r}")
        if shard.failed is not None:
            raise TxnError(Error.COORDINATOR_NOT_AVAILABLE, shard.failed)
        if not shard.loaded:
            raise TxnError(Error.COORDINATOR_LOAD_IN_PROGRESS, f"{TXN_TOPIC}-{shard.index} is loading")
        return shard

    # -- requests --------------------------------------------------------------------------------
    async def init_producer_id(self, request: bpb.InitProducerIdRequest) -> bpb.InitProducerIdResponse:
        tid = request.transactional_id
        try:
            shard = self.shard_for(tid)
            answer, records = await self._with_producer_id(lambda fresh: shard.machine.init_producer_id(
                tid, request.transaction_timeout_ms, self.clock(), producer_id=request.producer_id,
                producer_epoch=request.producer_epoch, enable_2pc=request.enable_2pc,
                keep_prepared_txn=request.keep_prepared_txn, fresh_producer_id=fresh))
        except TxnError as exc:
            return bpb.InitProducerIdResponse(error_code=exc.code, error_message=exc.message, producer_id=-1,
                                              producer_epoch=-1, ongoing_txn_producer_id=-1,
                                              ongoing_txn_producer_epoch=-1)
        error = await self._write(shard, records) or answer.error
        if error != Error.NONE:
            return bpb.InitProducerIdResponse(error_code=error, error_message=answer.message, producer_id=-1,
                                              producer_epoch=-1, ongoing_txn_producer_id=-1,
                                              ongoing_txn_producer_epoch=-1)
        return bpb.InitProducerIdResponse(producer_id=answer.producer_id, producer_epoch=answer.producer_epoch,
                                          ongoing_txn_producer_id=answer.ongoing_producer_id,
                                          ongoing_txn_producer_epoch=answer.ongoing_producer_epoch)

    async def add_partitions(self, request: tpb.AddPartitionsToTxnRequest) -> tpb.AddPartitionsToTxnResponse:
        """AddPartitionsToTxn (or with verify_only, the check alone)."""
        wanted = [(t.name, p) for t in request.topics for p in t.partitions]
        image = self.replicas.image
        unknown = {tp for tp in wanted if image.topic(tp[0]) is None or tp[1] not in image.topic(tp[0]).partitions}
        try:
            shard = self.shard_for(request.transactional_id)
            if request.verify_only:
                codes = shard.machine.verify(request.transactional_id, request.producer_id, request.producer_epoch,
                                             wanted)
                return partition_results(wanted, codes.get, "")
            if unknown:
                return partition_results(wanted, lambda tp: Error.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                                          else Error.OPERATION_NOT_ATTEMPTED, "")
            code, message, records = shard.machine.add_partitions(
                request.transactional_id, request.producer_id, request.producer_epoch, wanted, self.clock())
            code = await self._write(shard, records) or code
        except TxnError as exc:
            refusal = exc.code
            response = partition_results(wanted, lambda tp: refusal, exc.message)
            response.error_code = refusal
            return response
        return partition_results(wanted, lambda tp: code, message)

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> int:
        """The verifier's call when this broker coordinates the id (raises TxnError otherwise)."""
        shard = self.shard_for(transactional_id)
        codes = shard.machine.verify(transactional_id, producer_id, producer_epoch, [(topic, partition)])
        return codes[(topic, partition)]

    async def add_offsets(self, request: tpb.AddOffsetsToTxnRequest) -> tpb.AddOffsetsToTxnResponse:
        if not request.group_id:
            return tpb.AddOffsetsToTxnResponse(error_code=Error.INVALID_GROUP_ID, error_message="no group id")
        index = partition_for(request.group_id, self.partitions_of(GROUP_METADATA_TOPIC,
                                                                   self.config.offsets_topic_num_partitions))
        try:
            shard = self.shard_for(request.transactional_id)
        except TxnError as exc:
            return tpb.AddOffsetsToTxnResponse(error_code=exc.code, error_message=exc.message)
        code, message, records = shard.machine.add_partitions(
            request.transactional_id, request.producer_id, request.producer_epoch,
            [(GROUP_METADATA_TOPIC, index)], self.clock())
        code = await self._write(shard, records) or code
        return tpb.AddOffsetsToTxnResponse(error_code=code, error_message=message)

    async def end_txn(self, request: tpb.EndTxnRequest) -> tpb.EndTxnResponse:
        try:
            shard = self.shard_for(request.transactional_id)
            answer, records = await self._with_producer_id(lambda fresh: shard.machine.end_txn(
                request.transactional_id, request.producer_id, request.producer_epoch, request.committed,
                self.clock(), fresh_producer_id=fresh))
        except TxnError as exc:
            return tpb.EndTxnResponse(error_code=exc.code, error_message=exc.message, producer_id=-1,
                                      producer_epoch=-1)
        shard.wake.fire()
        error = await self._write(shard, records) or answer.error
        if error != Error.NONE:
            return tpb.EndTxnResponse(error_code=error, error_message=answer.message, producer_id=-1,
                                      producer_epoch=-1)
        return tpb.EndTxnResponse(producer_id=answer.producer_id, producer_epoch=answer.producer_epoch)

    def describe(self, request: tpb.DescribeTransactionsRequest) -> tpb.DescribeTransactionsResponse:
        response = tpb.DescribeTransactionsResponse()
        for tid in request.transactional_ids:
            out = response.transaction_states.add(transactional_id=tid, producer_id=-1, producer_epoch=-1,
                                                  transaction_start_time_ms=-1, coordinator_id=self.broker_id)
            try:
                value = self.shard_for(tid).machine.describe(tid)
            except TxnError as exc:
                out.error_code = exc.code
                continue
            if value is None:
                out.error_code = Error.TRANSACTIONAL_ID_NOT_FOUND
                continue
            out.transaction_state = value.state.kafka_name
            out.transaction_timeout_ms, out.producer_id, out.producer_epoch = (
                value.timeout_ms, value.producer_id, value.producer_epoch)
            if value.partitions:
                out.transaction_start_time_ms = value.start_ms
                by_topic: dict[str, list[int]] = {}
                for topic, index in sorted(value.partitions):
                    by_topic.setdefault(topic, []).append(index)
                out.topics.extend(tpb.TxnTopic(name=t, partitions=ix) for t, ix in by_topic.items())
        return response

    def list_transactions(self, request: tpb.ListTransactionsRequest) -> tpb.ListTransactionsResponse:
        response = tpb.ListTransactionsResponse()
        unknown = [s for s in request.state_filters if s not in STATE_BY_NAME]
        response.unknown_state_filters.extend(unknown)
        states = {STATE_BY_NAME[s] for s in request.state_filters if s in STATE_BY_NAME}
        if request.state_filters and not states:
            return response  # only unknown states asked for: nothing matches
        now = self.clock()
        for _, shard in sorted(self.shards.items()):
            if not shard.current:
                continue
            if not shard.loaded:
                if shard.failed is None:
                    response.error_code = Error.COORDINATOR_LOAD_IN_PROGRESS
                continue
            for tid, value in shard.machine.list(states, set(request.producer_id_filters),
                                                 request.duration_filter_ms, now):
                response.transaction_states.add(transactional_id=tid, producer_id=value.producer_id,
                                                transaction_state=value.state.kafka_name)
        return response

    # -- FindCoordinator(key_type 1) -------------------------------------------------------------
    async def find_coordinator(self, request: gpb.FindCoordinatorRequest, listener: str,
                               ) -> gpb.FindCoordinatorResponse:
        if self.replicas.image.topic(TXN_TOPIC) is None and request.keys:
            c = self.config
            configs = {"cleanup.policy": "compact", "min.insync.replicas": str(c.transaction_state_log_min_isr),
                       "segment.bytes": str(c.transaction_state_log_segment_bytes)}
            await self.creator.create(cpb.CreateTopicsRequest.CreatableTopic(
                name=TXN_TOPIC, num_partitions=c.transaction_state_log_num_partitions,
                replication_factor=c.transaction_state_log_replication_factor,
                configs=[cpb.ConfigEntry(name=k, value=v) for k, v in configs.items()]))
        response = gpb.FindCoordinatorResponse()
        for key in request.keys:
            out = response.coordinators.add(key=key, node_id=-1)
            if not key:
                out.error_code, out.error_message = Error.INVALID_REQUEST, "the transactional id is empty"
            else:
                coordinator_of(self.replicas.image, TXN_TOPIC, key, listener, out)
        return response


def partition_results(wanted: list[TopicPartition], code_of: Callable[[TopicPartition], Optional[int]],
                       message: str) -> tpb.AddPartitionsToTxnResponse:
    response = tpb.AddPartitionsToTxnResponse(error_message=message)
    topics: dict[str, tpb.AddPartitionsToTxnResponse.TopicResult] = {}
    for tp in wanted:
        topic = topics.get(tp[0])
        if topic is None:
            topic = topics[tp[0]] = response.results.add(name=tp[0])
        topic.results.add(partition_index=tp[1], error_code=code_of(tp) or Error.NONE)
    return response
