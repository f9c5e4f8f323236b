"""The transaction coordinator's shell on one broker: a TxnMachine per
__transaction_state partition this broker leads, its records appended to
that partition, its timer and marker writing on asyncio.

Shards, leadership, loading and reloading after a refused append are the
shell both coordinators share (broker/coordinator_shards.py).

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
  expired ids. Transaction timeouts run on the monotonic clock (`timer`),
  so a wall clock the testbed jumps aborts nothing early and keeps nothing
  open late; the wall clock (`clock`) stamps what is written and drives the
  calendar rules (transactional.id.expiration.ms, ListTransactions'
  duration). A load arms the open transactions' deadlines once from their
  written start times (TxnMachine.arm_timers).
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
from partition_log.clock import monotonic_ms
from partition_log.log import Clock, wall_clock_ms

from ..config import BrokerConfig
from ..controller_client import ControllerClient
from ..coordinator_shards import Shard, ShardedCoordinator, client_error
from ..coordinator_topics import InternalTopicCreator, coordinator_of
from ..errors import BrokerError, Error
from ..partition import Partition
from ..produce import ProduceResult
from ..replica_manager import ReplicaManager
from ..waiting import Signal
from .machine import PREPARE, NeedProducerId, TxnConfig, TxnError, TxnMachine
from .markers import MarkerWriter
from .records import STATE_BY_NAME, TopicPartition, decode_record, encode_record
from .records import Record as TxnRecord

log = logging.getLogger(__name__)

TXN_TOPIC = TRANSACTION_STATE_TOPIC
CREATE_TIMEOUT_S = 10.0
# How long AddPartitionsToTxn and AddOffsetsToTxn wait at the coordinator for
# the id's last transaction to settle (its markers written, its Complete*
# record replicated) before answering CONCURRENT_TRANSACTIONS. A producer
# starts its next transaction while the last one's markers are being
# written; answered when they are, it saves the client's retry backoff.
SETTLE_WAIT_S = 0.5

T = TypeVar("T")


class TxnShard(Shard[TxnMachine]):
    """The coordinator of one __transaction_state partition, for one leader epoch,
    with its marker-writing tasks."""

    def __init__(self, partition: Partition, machine: TxnMachine) -> None:
        super().__init__(partition, machine)
        self.markers: set[asyncio.Task[None]] = set()
        # Ids whose records are being appended: their new state is the
        # machine's until the ISR has them, so no request may read or change
        # it meanwhile (CONCURRENT_TRANSACTIONS, as Kafka's pending transition).
        self.writing: set[str] = set()
        self.settled = Signal()  # a write's outcome is known

    def busy(self, transactional_id: str) -> bool:
        """A write of the id is in flight, or its last transaction is still being completed."""
        value = self.machine.describe(transactional_id)
        return transactional_id in self.writing or (value is not None and value.state in PREPARE)

    def cancel(self) -> list[asyncio.Task[None]]:
        self.settled.fire()
        tasks = super().cancel() + list(self.markers)
        for task in self.markers:
            task.cancel()
        self.markers = set()
        return tasks


class TransactionCoordinator(ShardedCoordinator[TxnShard]):
    topic = TXN_TOPIC
    role = "transaction coordinator"

    def __init__(self, broker_id: int, replicas: ReplicaManager, controllers: ControllerClient,
                 config: BrokerConfig, *, new_producer_id: Callable[[], Awaitable[int]], markers: MarkerWriter,
                 append_timeout_ms: int = 30000, clock: Clock = wall_clock_ms, timer: Clock = monotonic_ms,
                 create_timeout_s: float = CREATE_TIMEOUT_S) -> None:
        super().__init__(broker_id, replicas)
        self.controllers = controllers
        self.config = config
        self.new_producer_id = new_producer_id
        self.markers = markers
        self.append_timeout_ms = append_timeout_ms
        self.clock = clock  # the wall clock: what is written, and the calendar rules
        self.timer = timer  # the monotonic clock: transaction timeouts
        self.txn_config = TxnConfig(max_timeout_ms=config.transaction_max_timeout_ms,
                                    id_expiration_ms=config.transactional_id_expiration_ms)
        self.creator = InternalTopicCreator(broker_id, controllers, create_timeout_s)
        # Counts for the node's metrics (kraftlog_server/metrics/): transactions completed
        # here by result (their Complete* record written), and those aborted on their timeout.
        self.completed = {True: 0, False: 0}
        self.timed_out = 0

    # -- leadership ------------------------------------------------------------------------------
    def new_shard(self, partition: Partition) -> TxnShard:
        return TxnShard(partition, TxnMachine(self.txn_config))

    async def run_shard(self, shard: TxnShard) -> None:
        await self._load(shard)
        for job in shard.machine.marker_jobs():
            self._start_markers(shard, [(job.transactional_id, shard.machine.describe(job.transactional_id))])
        interval_ms = self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms
        while not shard.closed:
            now = self.timer()
            deadline = shard.machine.next_deadline(now, self.clock())
            delay_ms = interval_ms if deadline is None else min(max(deadline - now, 0), interval_ms)
            try:
                await asyncio.wait_for(asyncio.shield(shard.wake.wait()), delay_ms / 1000)
            except asyncio.TimeoutError:
                pass
            if shard.closed:
                return
            for tid in shard.machine.timed_out(self.timer()):
                if tid in shard.writing:
                    continue  # its write decides first; the next round looks again
                try:
                    records = await self._with_producer_id(
                        lambda fresh, tid=tid: shard.machine.abort_timed_out(
                            tid, self.timer(), wall_ms=self.clock(), fresh_producer_id=fresh))
                except TxnError as exc:  # no producer id yet: the next round tries again
                    log.warning("%s-%d: cannot abort %r yet: %s", TXN_TOPIC, shard.index, tid, exc.message)
                    continue
                if records:
                    log.info("%s-%d: aborting the transaction of %r on its timeout", TXN_TOPIC, shard.index, tid)
                if await self._write(shard, records) == Error.NONE and records:
                    self.timed_out += 1
            await self._write(shard, shard.machine.expire_ids(self.clock()))

    async def _load(self, shard: TxnShard) -> None:
        shard.loaded = False
        previous, shard.machine = shard.machine, TxnMachine(self.txn_config)  # a reload keeps its deadlines
        started, count = self.timer(), 0
        async for data in self.log_chunks(shard):
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
        await self.wait_replicated(shard)
        if shard.closed or not shard.current:
            return
        # The open transactions' timeouts: from what their written start
        # times leave of them (by this wall clock, clamped to [0, timeout]),
        # on the monotonic clock from here on.
        shard.machine.arm_timers(self.timer(), self.clock(), previous)
        shard.loaded = True
        log.info("broker %d: transaction coordinator of %s-%d loaded in epoch %d: %d records, %d ids, %d ms",
                 self.broker_id, TXN_TOPIC, shard.index, shard.leader_epoch, count, len(shard.machine.txns),
                 self.timer() - started)

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

    async def _write(self, shard: TxnShard, records: list[TxnRecord]) -> int:
        """Append and wait for the high watermark; the error code for the client.
        Markers start for every Prepare* record once it is durable. Any
        failure reloads the shard from the log (which is then served only
        once replicated): the machine moved ahead of the log, and a retried
        request must not be answered from a state the ISR may never get.

        The write runs to its end even when the request that made it is
        cancelled (gRPC cancels a handler at its client's deadline): the
        machine already holds the change, so only the write's outcome may
        release the ids or reload the shard. Cancelled halfway, the ids were
        released with the change in the machine and nothing in the ISR, and
        the client's retry was told "committed" by a coordinator cut off from
        its followers (chaos seed 6: isolate-coordinator)."""
        if not records:
            return Error.NONE
        ids = {tid for tid, _ in records}
        shard.writing |= ids  # no other request may read or change these ids until the outcome is known
        now = self.clock()
        batch = encode_batch([Record(*encode_record(r), timestamp=now) for r in records])
        appended = self.append(shard, batch, self.append_timeout_ms, f"{len(records)} transaction records",
                               reload_when_unreplicated=True)
        return await asyncio.shield(self._written(shard, records, ids, appended))

    async def _written(self, shard: TxnShard, records: list[TxnRecord], ids: set[str],
                       appended: Awaitable[ProduceResult]) -> int:
        try:
            result = await appended
        finally:
            shard.writing -= ids
            shard.settled.fire()
        if result.error == Error.NONE:
            if log.isEnabledFor(logging.DEBUG):
                self._log_decisions(shard, records, result.base_offset)
            self._start_markers(shard, records)
            return Error.NONE
        return client_error(result.error)

    def _log_decisions(self, shard: TxnShard, records: list[TxnRecord], offset: int) -> None:
        """One line per durable transition, with who caused an end: what a
        chaos run's anomaly is traced back through (logger broker.transactions
        at DEBUG, kraftlog.log.logger.levels)."""
        for tid, value in records:
            if value is None:
                log.debug("%s-%d@%d epoch %d: %r expired", TXN_TOPIC, shard.index, offset, shard.leader_epoch, tid)
                continue
            txn = shard.machine.txns.get(tid)
            log.debug("%s-%d@%d epoch %d: %r %s producer %d epoch %d, %d partitions (ended by %s)", TXN_TOPIC,
                      shard.index, offset, shard.leader_epoch, tid, value.state.kafka_name, value.producer_id,
                      value.producer_epoch, len(value.partitions), txn.ended_by.value if txn else "-")

    def _start_markers(self, shard: TxnShard, records: list[TxnRecord]) -> None:
        for record in records:
            job = TxnMachine.marker_job(record)
            if job is not None and shard.current:
                task = asyncio.create_task(self._markers(shard, job), name=f"txn-markers-{job.transactional_id}")
                shard.markers.add(task)
                task.add_done_callback(shard.markers.discard)

    async def _markers(self, shard: TxnShard, job) -> None:
        try:
            if await self.markers.write(job, shard.leader_epoch, lambda: shard.current):
                records = shard.machine.complete(job, self.clock())
                if await self._write(shard, records) == Error.NONE and records:
                    self.completed[job.committed] += 1
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the next load resumes the markers
            log.exception("%s-%d: writing the markers of %r failed", TXN_TOPIC, shard.index, job.transactional_id)

    # -- routing ---------------------------------------------------------------------------------
    def coordinator_partition(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partitions_of(
            TXN_TOPIC, self.config.transaction_state_log_num_partitions))

    def shard_for(self, transactional_id: str, *, to_describe: bool = False) -> TxnShard:
        """The id's shard, loaded and current; unless only to describe it,
        CONCURRENT_TRANSACTIONS while a write of the id is in flight."""
        if not transactional_id:
            raise TxnError(Error.INVALID_REQUEST, "the transactional id is empty")
        shard = self.shard_at(self.coordinator_partition(transactional_id), TxnError)
        if transactional_id in shard.writing and not to_describe:
            raise TxnError(Error.CONCURRENT_TRANSACTIONS,
                           f"an earlier request of {transactional_id!r} is still being written")
        return shard

    async def settle(self, transactional_id: str) -> None:
        """Until the id's shard has no write of it in flight and no transaction
        of it being completed, for at most SETTLE_WAIT_S; then the request is
        decided as usual (CONCURRENT_TRANSACTIONS if still busy)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_WAIT_S
        while True:
            try:
                shard = self.shard_at(self.coordinator_partition(transactional_id), TxnError)
            except TxnError:
                return  # the request's own routing answers
            remaining = deadline - loop.time()
            if not shard.busy(transactional_id) or remaining <= 0:
                return
            try:
                await asyncio.wait_for(asyncio.shield(shard.settled.wait()), remaining)
            except asyncio.TimeoutError:
                return

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
            if not request.verify_only and request.transactional_id:
                await self.settle(request.transactional_id)
            shard = self.shard_for(request.transactional_id)
            if request.verify_only:
                codes = shard.machine.verify(request.transactional_id, request.producer_id, request.producer_epoch,
                                             wanted)
                return partition_results(wanted, codes.get, "")
            if unknown:
                return partition_results(wanted, lambda tp: Error.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                                          else Error.OPERATION_NOT_ATTEMPTED, "")
            code, message, records = shard.machine.add_partitions(
                request.transactional_id, request.producer_id, request.producer_epoch, wanted, self.timer(),
                wall_ms=self.clock())
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
            if request.transactional_id:
                await self.settle(request.transactional_id)
            shard = self.shard_for(request.transactional_id)
        except TxnError as exc:
            return tpb.AddOffsetsToTxnResponse(error_code=exc.code, error_message=exc.message)
        code, message, records = shard.machine.add_partitions(
            request.transactional_id, request.producer_id, request.producer_epoch,
            [(GROUP_METADATA_TOPIC, index)], self.timer(), wall_ms=self.clock())
        code = await self._write(shard, records) or code
        return tpb.AddOffsetsToTxnResponse(error_code=code, error_message=message)

    async def end_txn(self, request: tpb.EndTxnRequest) -> tpb.EndTxnResponse:
        try:
            shard = self.shard_for(request.transactional_id)
            answer, records = await self._with_producer_id(lambda fresh: shard.machine.end_txn(
                request.transactional_id, request.producer_id, request.producer_epoch, request.committed,
                self.clock(), fresh_producer_id=fresh, keep_epoch=request.keep_epoch))
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
                value = self.shard_for(tid, to_describe=True).machine.describe(tid)
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
