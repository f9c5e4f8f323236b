"""One partition replica on this broker: its log, what the metadata image
says of it, and - while this broker leads it - the leader's state.

A role change swaps state, not flags: `leadership` holds what only a leader
has (followers' fetch state, the ISR proposal in flight, acks=all waiters)
and is None on a follower. Every method that needs a leader goes through
`leader()`, which raises the error a client must see.

Producers (idempotent and transactional) are tracked on every replica by
`producer_log` (broker/producer_log.py): loaded from the newest snapshot and
replayed, updated by every append, so a new leader has them. Transactions
end with markers (`append_txn_marker`); readers of committed data stop at
`last_stable_offset`.

A replica holds no log until it is used. A new replica (no directory of it
on disk) starts unopened: it is an empty log at offset 0 - log start, log
end and high watermark 0, no producers, at most one leader epoch (the one
it led in, starting at 0, which Kafka's leader records at once) - and the
request paths read those through the partition (`log_end_offset`,
`log_start_offset`, `high_watermark`, `latest_epoch`, `end_offset_for_epoch`,
`read`) without opening anything. The first use that needs the log - an
append (leader or follower), a truncation that moves the log start, a
DeleteRecords past 0, any access to `log` or `producers` - opens it through
the `LogStore` (the replica manager): its directory and first segment are
created then, never for a replica that is only led or followed. An
unopened replica costs one slotted object and its entries in the replica
manager's indexes (docs/bench.md, target 6).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Protocol

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import PartitionState
from kafka_protocol.batch import parse_header
from kafka_protocol.control_records import TxnMarker, encode_txn_marker
from kafka_protocol.errors import KafkaStorageError, OffsetOutOfRangeError
from partition_log.config import LogConfig
from partition_log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from partition_log.log import AppendInfo, Clock, Log
from partition_log.log_dir_failure import LogDirFailure
from partition_log.validator import check_producer_batches

from . import isr as isr_rules
from .epochs import end_offset_for_epoch
from .errors import BrokerError, Error
from .producer_ids import MAX_EPOCH
from .producer_log import ProducerLog
from .producer_state import AppendOrigin, ProducerStateManager
from .waiting import OffsetWaiters, Signal

log = logging.getLogger(__name__)

NO_LEADER = -1
NO_EPOCH = -1
# AlterPartition answers that prove the controller changed nothing (its checks come after the epoch
# checks, so a retried proposal it had applied is never answered with these): the proposal is dropped.
NOTHING_CHANGED = frozenset({Error.INELIGIBLE_REPLICA, Error.OPERATION_NOT_ATTEMPTED, Error.INVALID_REQUEST})


@dataclass(slots=True)
class Leadership:
    """What only the leader of the partition holds, for one leader epoch."""

    epoch_start_offset: int
    followers: isr_rules.Followers
    hw_waiters: OffsetWaiters = field(default_factory=OffsetWaiters)
    # The AlterPartition item in flight (sent or to be sent), and whether it
    # still has to go out (new, or its last send failed in transport).
    pending: Optional[cpb.AlterPartitionRequest.PartitionData] = None
    pending_unsent: bool = False


class LogStore(Protocol):
    """The replica manager as its replicas see it: their broker, its clocks,
    and where an unopened replica's log comes from (held once per broker,
    not per replica)."""

    broker_id: int
    clock: Clock  # wall time: batch and marker timestamps
    timer: Clock  # replica lag is a duration: measured on a clock no wall-clock jump moves

    @property
    def log_dir_failure(self) -> LogDirFailure: ...

    def log_config(self, topic: str) -> LogConfig: ...

    def open_log(self, partition: "Partition") -> tuple[Log, ProducerStateManager]:
        """Open or create the partition's log (KafkaStorageError when it cannot)."""
        ...


class Partition:
    __slots__ = ("tp", "topic", "index", "topic_id", "_log", "_store", "leader_id", "leader_epoch", "partition_epoch",
                 "replicas", "isr", "leader_recovery_state", "min_insync_replicas", "strict_min_isr", "leadership",
                 "stopped", "changed", "_producers", "_producer_log", "_epoch", "indexed_under")

    def __init__(self, topic: str, index: int, topic_id: bytes, log: Optional[Log], store: LogStore, *,
                 producers: Optional[ProducerStateManager] = None) -> None:
        """`log` None: an unopened replica, opened through `store` on first use."""
        self.tp = (topic, index)  # the key of every index of the replica manager, one tuple
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self._store = store
        self.leader_id = NO_LEADER
        self.leader_epoch = NO_EPOCH
        self.partition_epoch = NO_EPOCH
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.leader_recovery_state: int = mpb.RECOVERED
        self.min_insync_replicas = 1
        # KIP-966's strict min ISR rule (eligible.leader.replicas.version 1): the
        # high watermark stays while the ISR is below min.insync.replicas.
        self.strict_min_isr = False
        self.leadership: Optional[Leadership] = None
        self.stopped = False
        self.changed = Signal()  # appends, high watermark moves, role changes
        # Unopened: the epoch this replica led in (its empty log's only epoch, from offset 0), or -1.
        self._epoch = UNDEFINED_EPOCH
        self._log: Optional[Log] = None
        self._producers: Optional[ProducerStateManager] = None
        self._producer_log: Optional[ProducerLog] = None
        # The leader id the replica manager files it under (its own id: led here), None: not filed.
        self.indexed_under: Optional[int] = None
        if log is not None:
            self._attach(log, producers if producers is not None else ProducerStateManager())

    @property
    def broker_id(self) -> int:
        return self._store.broker_id

    @property
    def clock(self) -> Clock:
        return self._store.clock

    @property
    def timer(self) -> Clock:
        return self._store.timer

    def _attach(self, log: Log, producers: ProducerStateManager) -> None:
        # Producers, on every replica: a function of the log, so it is loaded
        # from the log here and after every truncation.
        self._log = log
        self._producers = producers
        self._producer_log = ProducerLog(log, producers, self.clock)
        self._producer_log.load()

    # -- the log, opened on first use ------------------------------------------
    @property
    def opened(self) -> bool:
        return self._log is not None

    @property
    def log(self) -> Log:
        """The replica's log, opened (its directory created) now if it was not."""
        return self._log if self._log is not None else self.open()

    @property
    def producers(self) -> ProducerStateManager:
        if self._producers is None:
            self.open()
        assert self._producers is not None
        return self._producers

    @property
    def producer_log(self) -> ProducerLog:
        if self._producer_log is None:
            self.open()
        assert self._producer_log is not None
        return self._producer_log

    def open(self) -> Log:
        """Open the log of an unopened replica: created empty at offset 0,
        with the epoch it led in recorded from 0 as a new leader's is."""
        if self._log is not None:
            return self._log
        if self.stopped:
            raise KafkaStorageError(f"the replica of {self.topic}-{self.index} was removed from this broker")
        log, producers = self._store.open_log(self)
        self._attach(log, producers)
        if self._epoch >= 0:
            log.start_leader_epoch(self._epoch)
            self._epoch = UNDEFINED_EPOCH
        return log

    @property
    def config(self) -> LogConfig:
        if self._log is not None:
            return self._log.config
        return self._store.log_config(self.topic)

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset if self._log is not None else 0

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset if self._log is not None else 0

    @property
    def size_in_bytes(self) -> int:
        return self._log.size_in_bytes if self._log is not None else 0

    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch of the log's epoch cache (-1: none)."""
        return self._log.leader_epochs.latest_epoch if self._log is not None else self._epoch

    def epoch_for_offset(self, offset: int) -> int:
        if self._log is not None:
            return self._log.leader_epochs.epoch_for_offset(offset)
        return self._epoch if offset >= 0 else UNDEFINED_EPOCH

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch over this replica's log (broker/epochs.py)."""
        if self._log is not None:
            return end_offset_for_epoch(self._log, epoch)
        # An empty log: at most one epoch, from offset 0 (epochs.py's answers for it).
        if epoch < 0 or self._epoch < 0 or epoch > self._epoch:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        return epoch, 0

    def _check_dir(self) -> None:
        """An unopened replica in an offline log directory answers as its log would."""
        self._store.log_dir_failure.check()

    def __repr__(self) -> str:
        role = "leader" if self.leadership else f"follower of {self.leader_id}"
        return f"Partition({self.topic}-{self.index}, {role}, epoch {self.leader_epoch}, isr {list(self.isr)})"

    @property
    def is_leader(self) -> bool:
        return self.leadership is not None

    @property
    def high_watermark(self) -> int:
        return self._log.high_watermark if self._log is not None else 0

    @property
    def last_stable_offset(self) -> int:
        return self._producer_log.last_stable_offset() if self._producer_log is not None else 0

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        pending = self.leadership.pending if self.leadership else None
        return isr_rules.maximal_isr(self.isr, pending.new_isr if pending is not None else None)

    # -- role changes (from the metadata image) -----------------------------
    def _is_stale(self, state: PartitionState) -> bool:
        return (state.leader_epoch, state.partition_epoch) < (self.leader_epoch, self.partition_epoch)

    def _adopt(self, state: PartitionState) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.replicas = state.replicas
        self.isr = state.isr
        self.leader_recovery_state = state.leader_recovery_state

    def become_leader(self, state: PartitionState) -> bool:
        """Lead with the image's epochs and ISR. Returns True on a new leader
        epoch; an ISR or replica change in the same epoch keeps the
        followers' fetch state."""
        if self._is_stale(state):
            log.warning("%r: ignoring stale state %s", self, state)
            return False
        new_epoch = self.leadership is None or state.leader_epoch != self.leader_epoch
        lead = self.leadership
        if new_epoch:
            now = self.timer()
            end = self.log_end_offset
            # Kafka records the epoch's start at once, not at its first
            # append: a follower holding batches of an epoch this leader never
            # wrote must learn where this leader's log ends (OffsetsForLeaderEpoch).
            # An unopened (empty) log keeps it until it opens.
            if self._log is not None:
                self._log.start_leader_epoch(state.leader_epoch)
            elif state.leader_epoch > self._epoch:
                self._epoch = state.leader_epoch
            # Every follower must fetch again before the high watermark moves;
            # ISR members count as caught up now, so none is dropped at once.
            followers = isr_rules.Followers(isr_rules.FollowerState(b, last_caught_up_ms=now if b in state.isr else 0)
                                            for b in state.replicas if b != self.broker_id)
            waiters = lead.hw_waiters if lead is not None else OffsetWaiters()
            self.leadership = lead = Leadership(end, followers, waiters)
            log.info("%s-%d: leader in epoch %d from offset %d, isr %s", self.topic, self.index,
                     state.leader_epoch, end, list(state.isr))
        else:
            assert lead is not None
            # Followers kept, added (not fetched yet), dropped as the replicas now are.
            lead.followers = isr_rules.Followers(lead.followers.get(b) or isr_rules.FollowerState(b)
                                                 for b in state.replicas if b != self.broker_id)
            if lead.pending is not None and state.partition_epoch > lead.pending.partition_epoch:
                lead.pending = None  # the metadata log has the outcome of the proposal
        self._adopt(state)
        self.stopped = False
        self.maybe_advance_high_watermark()
        self.changed.fire()
        return new_epoch

    def become_follower(self, state: PartitionState) -> bool:
        """Follow `state.leader` (-1: none yet). Returns True when the leader
        or its epoch changed, i.e. the fetcher must start over."""
        if self._is_stale(state):
            log.warning("%r: ignoring stale state %s", self, state)
            return False
        changed = (self.leadership is not None or state.leader_epoch != self.leader_epoch
                   or state.leader != self.leader_id)
        self._resign()
        self._adopt(state)
        self.stopped = False
        self.changed.fire()
        if changed:
            log.info("%s-%d: follower of %d in epoch %d", self.topic, self.index, state.leader, state.leader_epoch)
        return changed

    def stop(self) -> None:
        """The replica leaves this broker (or its topic is deleted)."""
        self._resign()
        self.stopped = True
        self.changed.fire()

    def _resign(self) -> None:
        if self.leadership is not None:
            self.leadership.hw_waiters.complete_all(Error.NOT_LEADER_OR_FOLLOWER)
            self.leadership = None

    # -- checks --------------------------------------------------------------
    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """A request's current_leader_epoch (-1: not checked) against ours."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise BrokerError(Error.FENCED_LEADER_EPOCH,
                              f"epoch {current_leader_epoch} is older than the leader epoch {self.leader_epoch}")
        raise BrokerError(Error.UNKNOWN_LEADER_EPOCH,
                          f"epoch {current_leader_epoch} is newer than the leader epoch {self.leader_epoch}")

    def leader(self, current_leader_epoch: int = NO_EPOCH) -> Leadership:
        """Our leadership, after the request's epoch check (epochs first, as Kafka)."""
        self.check_leader_epoch(current_leader_epoch)
        if self.leadership is None or self.stopped:
            raise BrokerError(Error.NOT_LEADER_OR_FOLLOWER,
                              f"broker {self.broker_id} does not lead {self.topic}-{self.index} "
                              f"(leader {self.leader_id}, epoch {self.leader_epoch})")
        return self.leadership

    # -- produce -------------------------------------------------------------
    def append(self, records: bytes, acks: int, origin: AppendOrigin = AppendOrigin.CLIENT) -> AppendInfo:
        """Append producer batches as the leader, each checked whole first
        (partition_log.validator: nothing is written if one is bad); with
        acks=all, only while the ISR is at least min.insync.replicas.
        A COORDINATOR's batches (this broker's group coordinator) skip the
        sequence checks. Transactional batches are verified by the caller
        (produce.py) before they come here."""
        self.leader()
        view = memoryview(records)
        now = self.clock()
        try:
            validated = self.log.validate_as_leader(view)
            check_producer_batches(view, validated, self.log.config, now)
            duplicate = self.producers.check_leader_append([h for _, h in validated], now, origin)
        except Exception:
            self._check_min_isr(acks)  # Kafka's order for a refused batch: the ISR first
            raise
        if duplicate is not None:
            # A retry of batches already written: the original offsets, nothing
            # appended - also below min.insync.replicas, where NOT_ENOUGH_REPLICAS
            # would tell the producer they were not written (librdkafka then
            # renumbers them on its next epoch bump: written twice). acks=all
            # waits for the ISR to be back (produce.py).
            return AppendInfo(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp, 0, 0)
        self._check_min_isr(acks)
        info = self.log.append_as_leader(view, self.leader_epoch, validated=validated)
        self.producer_log.appended_data((h for _, h in validated), info.first_offset)
        self._appended()
        return info

    def append_txn_marker(self, producer_id: int, producer_epoch: int, committed: bool,
                          coordinator_epoch: int, *, keep_epoch: bool = False) -> AppendInfo:
        """A transaction coordinator's COMMIT or ABORT marker for the
        producer, appended as the leader (acks=all: the ISR must be at least
        min.insync.replicas). Refused, with nothing appended, when it comes
        from a deposed coordinator or an older producer epoch (keep_epoch:
        a transaction version 1 marker, producer_state.check_marker)."""
        if producer_id < 0 or not 0 <= producer_epoch <= MAX_EPOCH:
            raise BrokerError(Error.INVALID_REQUEST, f"a marker needs a producer id and epoch, not "
                                                     f"{producer_id} and {producer_epoch}")
        self.leader()
        self._check_min_isr(-1)
        now = self.clock()
        self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch, now, keep_epoch=keep_epoch)
        batch = encode_txn_marker(producer_id, producer_epoch, committed, coordinator_epoch, now)
        info = self.log.append_as_leader(batch, self.leader_epoch)
        stored = replace(parse_header(batch), base_offset=info.first_offset)
        self.producer_log.appended_marker(stored, TxnMarker(committed, coordinator_epoch), now)
        self._appended()
        return info

    def _check_min_isr(self, acks: int) -> None:
        if acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise BrokerError(Error.NOT_ENOUGH_REPLICAS,
                              f"isr {list(self.isr)} is smaller than min.insync.replicas={self.min_insync_replicas}")

    def _appended(self) -> None:
        self.maybe_advance_high_watermark()
        self.changed.fire()

    def wait_for_high_watermark(self, offset: int) -> asyncio.Future[int]:
        """A future completed with an error code once the high watermark
        reaches `offset`: NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR
        shrank below min.insync.replicas on the way, NOT_LEADER_OR_FOLLOWER if
        leadership was lost first."""
        lead = self.leader()
        future = lead.hw_waiters.add(offset)
        lead.hw_waiters.complete_up_to(self.high_watermark, self._replicated_result())
        return future

    def forget_waiter(self, future: asyncio.Future[int]) -> None:
        if self.leadership is not None:
            self.leadership.hw_waiters.discard(future)

    def _replicated_result(self) -> Error:
        if len(self.maximal_isr) >= self.min_insync_replicas:
            return Error.NONE
        return Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    # -- high watermark ------------------------------------------------------
    def maybe_advance_high_watermark(self) -> bool:
        """Leader: move the high watermark up to what every maximal-ISR member
        holds (never back), completing the acks=all waiters it passes.

        With `strict_min_isr` (KIP-966), only while the ISR the controller
        committed has at least min.insync.replicas members, as Kafka's
        leader counts it (a member joining is not counted before the
        controller accepts it; one leaving still bounds the high watermark
        until then): a replica that leaves an ISR below min ISR then holds
        everything below the high watermark, so the controller may elect it
        from the ELR. acks=0 and acks=1 writes wait for it too."""
        lead = self.leadership
        if lead is None:
            return False
        if self.strict_min_isr and len(self.isr) < self.min_insync_replicas:
            return False
        lg = self._log
        if lg is None:
            return False  # an empty log: the high watermark is its end, 0
        bound = isr_rules.high_watermark_bound(self.broker_id, lg.log_end_offset, self.maximal_isr,
                                               lead.followers)
        if bound is None or not lg.maybe_increment_high_watermark(bound):
            return False
        self.producer_log.sync_unstable()
        lead.hw_waiters.complete_up_to(self.high_watermark, self._replicated_result())
        self.changed.fire()
        return True

    # -- follower fetches (leader side) --------------------------------------
    def diverging_epoch(self, fetch_offset: int, last_fetched_epoch: int) -> Optional[tuple[int, int]]:
        """(epoch, end offset) where a follower's log leaves ours, if it does:
        our log has no batch of its last epoch at its fetch offset. As Kafka,
        OFFSET_OUT_OF_RANGE when we cannot tell (the epoch is unknown to us)
        or the fetch offset is below our log start."""
        epoch, end = self.end_offset_for_epoch(last_fetched_epoch)
        if end < 0:
            raise BrokerError(Error.OFFSET_OUT_OF_RANGE,
                              f"the end offset of epoch {last_fetched_epoch} is unknown to the leader")
        if fetch_offset < self.log_start_offset:
            raise BrokerError(Error.OFFSET_OUT_OF_RANGE,
                              f"offset {fetch_offset} is below the log start offset {self.log_start_offset}")
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def record_follower_fetch(self, replica_id: int, fetch_offset: int, broker_epoch: int = -1,
                              log_start_offset: int = -1) -> bool:
        """A follower (of `broker_epoch`, -1 if unknown) fetched at `fetch_offset`:
        it holds everything below (and nothing below `log_start_offset`).
        Returns True when it may now join the ISR (the caller asks for an
        AlterPartition)."""
        lead = self.leader()
        follower = lead.followers.get(replica_id)
        if follower is None:
            raise BrokerError(Error.NOT_LEADER_OR_FOLLOWER,
                              f"broker {replica_id} is not a replica of {self.topic}-{self.index}")
        start_moved = log_start_offset != follower.log_start_offset
        follower.record_fetch(fetch_offset, self.log_end_offset, self.timer(), broker_epoch, log_start_offset)
        if start_moved:
            self.changed.fire()  # DeleteRecords waits on the low watermark
        self.maybe_advance_high_watermark()
        return (replica_id not in self.maximal_isr
                and isr_rules.can_join(follower, self.high_watermark, lead.epoch_start_offset))

    def low_watermark(self) -> int:
        """Leader: the lowest log start offset of this replica and the in-sync
        followers (-1 for one that has not said yet): where DeleteRecords has
        taken effect on every replica that counts."""
        lead = self.leader()
        starts = [self.log_start_offset]
        starts += [lead.followers[b].log_start_offset for b in self.isr if b in lead.followers]
        return min(starts)

    # -- ISR changes ---------------------------------------------------------
    def propose_isr(self, lag_max_ms: int, eligible: Callable[[int, int], bool]) -> None:
        """Leader, with no proposal in flight: decide the ISR change to ask for."""
        lead = self.leadership
        if lead is None or lead.pending is not None:
            return
        now = self.timer()
        end = self.log_end_offset
        recovering = self.leader_recovery_state == mpb.RECOVERING
        leaving = isr_rules.out_of_sync(self.isr, self.broker_id, lead.followers, end, now, lag_max_ms)
        joining = [] if recovering else isr_rules.ready_to_join(
            self.replicas, self.isr, lead.followers, self.high_watermark, lead.epoch_start_offset, eligible)
        new_isr = isr_rules.next_isr(self.isr, leaving, joining)
        if new_isr is None and not recovering:
            return
        lead.pending = cpb.AlterPartitionRequest.PartitionData(
            partition_index=self.index, leader_epoch=self.leader_epoch, new_isr=new_isr or self.isr,
            partition_epoch=self.partition_epoch, leader_recovery_state=mpb.RECOVERED)
        for b in lead.pending.new_isr:  # KIP-903: the controller checks a new member's epoch
            follower = lead.followers.get(b)
            lead.pending.new_isr_with_epochs.add(broker_id=b, broker_epoch=follower.broker_epoch if follower else -1)
        lead.pending_unsent = True
        log.info("%s-%d: proposing isr %s (was %s; leaving %s, joining %s)", self.topic, self.index,
                 list(lead.pending.new_isr), list(self.isr), leaving, joining)

    def take_unsent_proposal(self) -> Optional[cpb.AlterPartitionRequest.PartitionData]:
        lead = self.leadership
        if lead is None or lead.pending is None or not lead.pending_unsent:
            return None
        lead.pending_unsent = False
        return lead.pending

    def proposal_unanswered(self, sent: cpb.AlterPartitionRequest.PartitionData) -> None:
        """The request carrying `sent` failed in transport: its outcome is
        unknown, so it stays in flight (the maximal ISR holds) and goes again."""
        lead = self.leadership
        if lead is not None and lead.pending == sent:
            lead.pending_unsent = True

    def proposal_answered(self, sent: cpb.AlterPartitionRequest.PartitionData,
                          result: cpb.AlterPartitionResponse.PartitionData) -> None:
        """The controller's answer to `sent`: adopt the ISR it committed; drop a
        proposal the controller refused without changing anything (the next
        check decides again); on any other refusal keep it pending, unsent, so
        the maximal ISR holds until the metadata log brings the partition's
        newer state, as Kafka's leader does. NEW_LEADER_ELECTED says the
        proposal was applied and completed a reassignment that removed this
        leader; FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION say the
        partition moved on, maybe through this very proposal sent before. Going
        back to the old ISR there would let the high watermark pass records the
        new ISR does not hold: acknowledged, then truncated by the new leader
        (the reassignment scenario's loss, docs/chaos.md)."""
        lead = self.leadership
        if lead is None or lead.pending != sent:
            return  # an answer to an older proposal, or we no longer lead
        if result.error_code in NOTHING_CHANGED:
            lead.pending = None
            log.info("%s-%d: isr proposal %s refused with error %d", self.topic, self.index,
                     list(sent.new_isr), result.error_code)
        elif result.error_code != Error.NONE:
            log.info("%s-%d: isr proposal %s answered with error %d: pending until the metadata log has the "
                     "partition's newer state", self.topic, self.index, list(sent.new_isr), result.error_code)
            return
        else:
            lead.pending = None
            if result.leader_epoch == self.leader_epoch and result.partition_epoch > self.partition_epoch:
                self.isr = tuple(result.isr)
                self.partition_epoch = result.partition_epoch
                self.leader_recovery_state = result.leader_recovery_state
        self.maybe_advance_high_watermark()

    # -- follower appends and truncation ---------------------------------------
    def append_as_follower(self, records: bytes) -> AppendInfo:
        """Batches fetched from the leader, with their offsets; the producer
        state follows them, so it is in place when this replica leads."""
        info = self.log.append_as_follower(records)
        self.producer_log.appended_from_leader(records)
        return info

    def truncate_to(self, offset: int) -> int:
        """Follower divergence: drop the log from `offset` and what the
        producer state learned from it."""
        if self._log is None:
            # An empty log keeps nothing at or past any offset: as Log.truncate_to
            # at its end, the epoch recorded there goes.
            self._check_dir()
            self._epoch = UNDEFINED_EPOCH
            return 0
        end = self._log.truncate_to(offset)
        self.producer_log.load()
        return end

    def truncate_fully_and_start_at(self, offset: int) -> None:
        if self._log is None and offset == 0:
            self._check_dir()
            self._epoch = UNDEFINED_EPOCH  # empty at 0 already
            return
        self.log.truncate_fully_and_start_at(offset)
        self.producer_log.load()

    def advance_log_start_offset(self, offset: int) -> None:
        """DeleteRecords (Log.advance_log_start_offset); an unopened log at 0 has nothing below 0."""
        if self._log is None and offset <= 0:
            self._check_dir()
            return
        self.log.advance_log_start_offset(offset)

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """A follower learns the leader's high watermark (capped at its log end:
        an unopened log's end is 0, where it stays)."""
        return self._log.maybe_increment_high_watermark(offset) if self._log is not None else False

    # -- reads ---------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, *, up_to_log_end: bool, min_one_batch: bool,
             committed: bool = False) -> bytes | memoryview:
        """Whole batches from `offset`: below the high watermark for consumers
        (below the last stable offset for read_committed ones), to the log end
        for followers."""
        if self._log is None:
            # Log.read of an empty log at 0: nothing, or out of range.
            if offset != 0:
                raise OffsetOutOfRangeError(f"offset {offset} is outside [0, 0] of {self.topic}-{self.index}")
            self._check_dir()
            return b""
        if up_to_log_end:
            max_offset = None
        else:
            max_offset = self.last_stable_offset if committed else self.high_watermark
        return self._log.read(offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch)
