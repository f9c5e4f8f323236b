"""The replicas this broker holds, driven by the metadata image.

`apply_metadata(image, delta)` is the metadata listener: every partition the
delta changed that names this broker as a replica is led or followed with
the image's epochs; a replica removed from this broker, or of a deleted
topic, is stopped and its log deleted. The request paths (produce, fetch,
offsets) find partitions here and raise the error a client must see.

Cost: a delta costs what it changed, never what the broker holds - the
partitions led here and those followed (by leader) are kept as indexes,
updated on each role change, for the ISR checks and the replica fetcher.

Logs are opened on first use (broker/partition.py): a new replica is a
`Partition` with no log, no directory and no producer state, so creating
thousands of partitions costs the brokers no disk I/O on the event loop
and little memory; the replica manager is the partitions' `LogStore`, which
creates the log (and its `partition.metadata`, the topic id) when a
partition first needs it. A log found on disk at start (opened, and
recovered after an unclean shutdown, by the LogManager before the broker
serves) is given to its partition at once - unless its `partition.metadata`
names another topic id: a leftover of a topic deleted (and made again
under its name) while this broker was away, deleted here, not served.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from kafka_protocol.internal_topics import is_reserved
from metadata_quorum.features import ELIGIBLE_LEADER_REPLICAS, elr_enabled
from metadata_quorum.image import MetadataDelta, MetadataImage, PartitionState
from kafka_protocol.errors import KafkaError, KafkaStorageError
from partition_log.clock import monotonic_ms
from partition_log.log import Clock, wall_clock_ms
from partition_log.config import LogConfig
from partition_log import partition_metadata
from partition_log.log import Log
from partition_log.log_dir_failure import LogDirFailure
from partition_log.log_manager import LogManager

from .config import BrokerConfig, topic_log_config, topic_min_insync_replicas
from .errors import BrokerError, Error
from .fetch_session import FetchSessionCache
from .partition import NO_EPOCH, NO_LEADER, Partition
from .producer_state import ProducerStateManager
from .replication_quota import ReplicationQuotas
from .waiting import Signal

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class ReplicaChanges:
    """What one apply_metadata did, for the fetcher shell and for tests."""

    leaders: list[Partition] = field(default_factory=list)    # new leader epochs here
    followers: list[Partition] = field(default_factory=list)  # new leader or epoch to fetch from
    stopped: list[TopicPartition] = field(default_factory=list)
    failed: dict[TopicPartition, str] = field(default_factory=dict)  # logs that could not open


@dataclass(slots=True)
class TrafficStats:
    """Kafka's BrokerTopicMetrics over every topic, as plain counters: added
    to once per partition of a request (or of a follower's fetch answer),
    never per record. Clients' bytes apart from the replicas' (Kafka's
    BytesIn/BytesOut against ReplicationBytesIn/ReplicationBytesOut)."""

    bytes_in: int = 0               # appended as leader (clients, the coordinators' own writes)
    messages_in: int = 0            # records in those appends
    bytes_out: int = 0              # answered to consumers' fetches
    replication_bytes_in: int = 0   # appended as follower
    replication_bytes_out: int = 0  # answered to followers' fetches


class TxnVerifier(Protocol):
    """KIP-890's check before a producer's first transactional batch at a
    partition: is the partition in the producer's ongoing transaction?
    (broker/transactions/verifier.py asks the transaction coordinator.)"""

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     topic: str, partition: int) -> int:
        """An error code: NONE when the partition is in the transaction."""
        ...


# Told of each transaction marker appended to a `__consumer_offsets` partition
# led here, synchronously, right after the append: (partition_index,
# producer_id, committed). The group coordinator registers its
# on_txn_completed, which makes the transaction's offsets committed or drops them.
TxnMarkerListener = Callable[[int, int, bool], None]


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, clock: Clock = wall_clock_ms,
                 config: Optional[BrokerConfig] = None, *, timer: Clock = monotonic_ms) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.clock = clock  # wall time (timestamps); `timer` for durations (replica lag)
        self.timer = timer
        self.config = config or BrokerConfig(log=log_manager.default_config)
        self.image = MetadataImage()
        self.partitions: dict[TopicPartition, Partition] = {}
        self.led: dict[TopicPartition, Partition] = {}
        self._followed: dict[int, dict[TopicPartition, Partition]] = {}  # leader id -> partitions
        self._settings: dict[str, tuple[LogConfig, int]] = {}
        self.offline: dict[TopicPartition, str] = {}  # replicas whose log could not be opened
        self.isr_change_wanted = Signal()  # a follower may join an ISR: worth an AlterPartition now
        # Transactions: None refuses every transactional batch that needs
        # verification (INVALID_TXN_STATE); the server sets the coordinator's.
        self.txn_verifier: Optional[TxnVerifier] = None
        self.txn_marker_listeners: list[TxnMarkerListener] = []
        self.traffic = TrafficStats()  # read by the node's metrics at scrape time
        # KIP-227 incremental fetch sessions of followers and consumers (broker/fetch_session.py).
        # Eviction ages (min.incremental.fetch.session.eviction.ms) are durations: the monotonic clock.
        self.fetch_sessions = FetchSessionCache(self.config.max_incremental_fetch_session_cache_slots, timer)
        # KIP-73 throttles: the leader's Fetch answers (fetch.py) and the fetcher (replica_fetcher.py) use them.
        self.replication_quotas = ReplicationQuotas(broker_id, self.config.replication_quota_window_num,
                                                    self.config.replication_quota_window_size_seconds)

    # -- metadata --------------------------------------------------------------
    def apply_metadata(self, image: MetadataImage, delta: MetadataDelta) -> ReplicaChanges:
        self.image = image
        self._settings = {}  # this image's, computed once per topic
        changes = ReplicaChanges()
        for topic_id, topic in delta.removed_topics.items():
            for index in topic.partitions:
                partition = self.partitions.get((topic.name, index))
                if partition is not None and partition.topic_id == topic_id:
                    self._remove(partition, changes)
        for topic_id, index in sorted(delta.changed_partitions):
            topic = image.topics.get(topic_id)
            state = topic.partitions.get(index) if topic is not None else None
            if topic is None or state is None:
                continue
            if is_reserved(topic.name):
                # Only a log written before the controller refused the name can
                # hold it; opening it would put a partition in the quorum's own
                # directory (<metadata.log.dir>/__cluster_metadata-0).
                log.error("%s-%d: the metadata names a topic %s, the metadata quorum's reserved name;"
                          " not opening it as a partition", topic.name, index, topic.name)
                continue
            current = self.partitions.get((topic.name, index))
            if self.broker_id in state.replicas:
                self._replicate(topic.name, index, topic_id, state, changes)
            elif current is not None:
                self._remove(current, changes)
        if delta.changed_configs:
            self._apply_configs(delta)
            self.replication_quotas.apply_configs(image, delta.changed_configs)
        if ELIGIBLE_LEADER_REPLICAS in delta.changed_features:
            strict = elr_enabled(image.features)
            for partition in self.partitions.values():
                partition.strict_min_isr = strict
                partition.maybe_advance_high_watermark()
        return changes

    def _replicate(self, topic: str, index: int, topic_id: bytes, state: PartitionState,
                   changes: ReplicaChanges) -> None:
        tp = (topic, index)
        partition = self.partitions.get(tp)
        if partition is not None and partition.topic_id != topic_id:
            self._remove(partition, changes)  # a topic deleted and made again under the same name
            partition = None
        if partition is None:
            try:
                self.log_manager.failure.check()  # KIP-112: no replica starts in an offline directory
                lg = self._found_log(topic, index, topic_id)
            except KafkaError as exc:
                log.error("%s-%d: cannot open the log: %s", topic, index, exc)
                self.offline[tp] = str(exc)
                changes.failed[tp] = str(exc)
                return
            if lg is None:  # a new replica: its log is created on first use (open_log)
                partition = Partition(topic, index, topic_id, None, self)
            else:
                partition = Partition(topic, index, topic_id, lg, self, producers=self._new_producers())
            partition.min_insync_replicas = self._topic_settings(topic)[1]
            partition.strict_min_isr = elr_enabled(self.image.features)
            self.partitions[partition.tp] = partition
            self.offline.pop(tp, None)
        if state.leader == self.broker_id:
            if partition.become_leader(state):
                changes.leaders.append(partition)
        elif partition.become_follower(state):
            changes.followers.append(partition)
        self._index(partition)

    def _found_log(self, topic: str, index: int, topic_id: bytes) -> Optional[Log]:
        """The partition's log found on disk at start, if any and if it is
        this topic's (partition.metadata; one without the file is adopted and labelled)."""
        lg = self.log_manager.logs.get((topic, index))
        if lg is None:
            return None
        try:
            found = partition_metadata.read(lg.directory)
        except partition_metadata.UnreadableMetadata as exc:
            log.warning("%s-%d: %s; the directory is taken as topic id %s's", topic, index, exc,
                        partition_metadata.topic_id_text(topic_id))
            found = None
        if found is not None and found != topic_id:
            log.warning("%s-%d: the log directory belongs to topic id %s, not %s (the topic was deleted and "
                        "made again under its name): deleting it", topic, index,
                        partition_metadata.topic_id_text(found), partition_metadata.topic_id_text(topic_id))
            self.log_manager.delete_log(topic, index)
            return None
        if found is None:
            partition_metadata.write(lg.directory, topic_id)
        lg.config = self._topic_settings(topic)[0]
        return lg

    # -- LogStore: the logs of unopened replicas, opened on first use -------
    @property
    def log_dir_failure(self) -> LogDirFailure:
        return self.log_manager.failure

    def log_config(self, topic: str) -> LogConfig:
        return self._topic_settings(topic)[0]

    def open_log(self, partition: Partition) -> tuple[Log, ProducerStateManager]:
        """Create (or open) the log of a replica used for the first time, labelled with its topic id."""
        if self.partitions.get(partition.tp) is not partition:
            raise KafkaStorageError(f"{partition.topic}-{partition.index} is no longer a replica here")
        lg = self.log_manager.get_or_create(partition.topic, partition.index, self._topic_settings(partition.topic)[0])
        try:
            partition_metadata.write(lg.directory, partition.topic_id)
        except KafkaStorageError as exc:
            raise self.log_manager.failure.fail(exc) from exc
        return lg, self._new_producers()

    def _new_producers(self) -> ProducerStateManager:
        return ProducerStateManager(expiration_ms=self.config.producer_id_expiration_ms,
                                    check_interval_ms=self.config.producer_id_expiration_check_interval_ms)

    def _index(self, partition: Partition) -> None:
        """File the partition under its current leader (ourselves: `led`)."""
        tp = partition.tp
        leader = self.broker_id if partition.is_leader else partition.leader_id
        if partition.indexed_under == leader:
            return
        self._unindex(partition)
        partition.indexed_under = leader
        if leader == self.broker_id:
            self.led[tp] = partition
        elif leader != NO_LEADER:
            self._followed.setdefault(leader, {})[tp] = partition

    def _unindex(self, partition: Partition) -> None:
        tp, old = partition.tp, partition.indexed_under
        partition.indexed_under = None
        if old == self.broker_id:
            del self.led[tp]
        elif old is not None and old != NO_LEADER:
            followers = self._followed[old]
            del followers[tp]
            if not followers:
                del self._followed[old]

    def _remove(self, partition: Partition, changes: ReplicaChanges) -> None:
        tp = partition.tp
        partition.stop()
        del self.partitions[tp]
        self._unindex(partition)
        self.log_manager.delete_log(*tp)
        changes.stopped.append(tp)
        log.info("%s-%d: replica removed from broker %d, log deleted", tp[0], tp[1], self.broker_id)

    def _apply_configs(self, delta: MetadataDelta) -> None:
        if (mpb.BROKER, "") in delta.changed_configs:
            touched = list(self.partitions.values())  # a cluster-wide default: every partition
        else:
            touched = []
            for kind, name in delta.changed_configs:
                topic = self.image.topic(name) if kind == mpb.TOPIC else None
                if topic is not None:
                    touched += (p for p in map(self.partitions.get, ((name, i) for i in topic.partitions))
                                if p is not None)
        for partition in touched:
            config, partition.min_insync_replicas = self._topic_settings(partition.topic)
            if partition.opened:  # an unopened one takes the settings of the image it opens in
                partition.log.config = config

    def _topic_settings(self, topic: str) -> tuple[LogConfig, int]:
        """The topic's log config and min.insync.replicas in this image, made
        once per topic and shared by its partitions."""
        settings = self._settings.get(topic)
        if settings is None:
            settings = self._settings[topic] = (
                topic_log_config(self.image, topic, self.log_manager.default_config),
                topic_min_insync_replicas(self.image, topic, self.config.min_insync_replicas))
        return settings

    # -- lookups for the request paths -------------------------------------
    def get(self, topic: str, index: int) -> Partition:
        """The replica here, or the error a client must see: NOT_LEADER_OR_FOLLOWER
        when the partition exists elsewhere, UNKNOWN_TOPIC_OR_PARTITION when not at all."""
        partition = self.partitions.get((topic, index))
        if partition is not None:
            return partition
        if is_reserved(topic):  # the quorum's log: never a partition clients may read
            raise BrokerError(Error.UNKNOWN_TOPIC_OR_PARTITION, f"{topic} is the metadata log, not a topic")
        if (topic, index) in self.offline:
            raise BrokerError(Error.KAFKA_STORAGE_ERROR, self.offline[(topic, index)])
        known = self.image.topic(topic)
        if known is None or index not in known.partitions:
            raise BrokerError(Error.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
        raise BrokerError(Error.NOT_LEADER_OR_FOLLOWER, f"broker {self.broker_id} holds no replica of {topic}-{index}")

    def leader_hint(self, topic: str, index: int) -> tuple[int, int]:
        """(leader id, leader epoch) as the image has them, for NOT_LEADER answers."""
        known = self.image.topic(topic)
        state = known.partitions.get(index) if known is not None else None
        return (state.leader, state.leader_epoch) if state is not None else (NO_LEADER, NO_EPOCH)

    def is_eligible(self, broker_id: int, fetch_broker_epoch: int = -1) -> bool:
        """May join an ISR: registered, unfenced, not shutting down (KIP-841),
        and its fetch not from an incarnation older than its registration
        (KIP-903; -1: the fetch did not say, the controller decides)."""
        broker = self.image.brokers.get(broker_id)
        return (broker is not None and not broker.fenced and not broker.in_controlled_shutdown
                and not 0 <= fetch_broker_epoch < broker.broker_epoch)

    def followed(self) -> dict[int, list[Partition]]:
        """The partitions this broker follows, by the leader to fetch from."""
        return {leader: list(partitions.values()) for leader, partitions in self._followed.items()}

    def followed_leaders(self) -> list[int]:
        return list(self._followed)

    def followed_by(self, leader_id: int) -> list[Partition]:
        """The partitions this broker follows from `leader_id`."""
        return list(self._followed.get(leader_id, {}).values())

    # -- ISR changes ---------------------------------------------------------
    def alter_partition_request(self) -> Optional[cpb.AlterPartitionRequest]:
        """Decide the ISR changes of every partition led here (drop followers
        lagging past replica.lag.time.max.ms, add caught-up ones) and return
        the AlterPartition request to send, with any proposal whose last send
        failed; None when there is nothing to ask. Call it periodically and
        when `isr_change_wanted` fires."""
        by_topic: dict[bytes, list[cpb.AlterPartitionRequest.PartitionData]] = {}
        for partition in self.led.values():
            partition.propose_isr(self.config.replica_lag_time_max_ms, self.is_eligible)
            item = partition.take_unsent_proposal()
            if item is not None:
                by_topic.setdefault(partition.topic_id, []).append(item)
        if not by_topic:
            return None
        me = self.image.brokers.get(self.broker_id)
        return cpb.AlterPartitionRequest(
            broker_id=self.broker_id, broker_epoch=me.broker_epoch if me is not None else -1,
            topics=[cpb.AlterPartitionRequest.TopicData(topic_id=tid, partitions=items)
                    for tid, items in sorted(by_topic.items())])

    def alter_partition_failed(self, request: cpb.AlterPartitionRequest) -> None:
        """The request got no answer: every proposal in it is resent next time."""
        for partition, sent in self._sent_items(request):
            partition.proposal_unanswered(sent)

    def alter_partition_answered(self, request: cpb.AlterPartitionRequest,
                                 response: cpb.AlterPartitionResponse) -> None:
        if response.error_code != Error.NONE:
            # Refused as a whole (NOT_CONTROLLER, STALE_BROKER_EPOCH): unchanged, try again.
            self.alter_partition_failed(request)
            return
        results = {(t.topic_id, p.partition_index): p for t in response.topics for p in t.partitions}
        for partition, sent in self._sent_items(request):
            result = results.get((partition.topic_id, sent.partition_index))
            if result is None:
                partition.proposal_unanswered(sent)
            else:
                partition.proposal_answered(sent, result)

    def _sent_items(self, request: cpb.AlterPartitionRequest):
        for topic in request.topics:
            known = self.image.topics.get(topic.topic_id)
            for item in topic.partitions:
                partition = self.partitions.get((known.name, item.partition_index)) if known else None
                if partition is not None and partition.topic_id == topic.topic_id:
                    yield partition, item
