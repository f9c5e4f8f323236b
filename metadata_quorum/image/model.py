"""The metadata image: the state the replicated metadata log describes.

Every controller and every broker replays the committed metadata records
(one serialized `mpb.MetadataRecord` per Raft entry), in log order, into a
MetadataImage. Replay follows Kafka's rules:

- RegisterBrokerRecord replaces the broker's registration; its broker_epoch
  comes from the record.
- BrokerRegistrationChangeRecord and UnregisterBrokerRecord need a
  registered broker with the same broker_epoch.
- TopicRecord adds a topic; its name and id must be unused.
- PartitionRecord adds or replaces a partition of a known topic.
- PartitionChangeRecord changes a known partition; absent fields are
  unchanged. The partition epoch grows by one on every change; the leader
  epoch grows by one only when `leader` is present and differs from the
  current leader (ISR, ELR or replica changes alone do not bump it). The
  eligible leader replicas and the last known ELR (KIP-966) are distinct
  replicas outside the ISR.
- RemoveTopicRecord removes the topic, its partitions and its config
  overrides (as Kafka does).
- ConfigRecord sets a setting, or removes it when `value` is absent.
- FeatureLevelRecord sets a feature level; level 0 removes the feature.
- ProducerIdsRecord moves next_producer_id forward (never back).
- NoOpRecord changes nothing but the offset.
- AccessControlEntryRecord adds an ACL under a new id (one CreateAcls would
  accept); RemoveAccessControlEntryRecord removes a known id.
- UserScramCredentialRecord sets a user's credential for one mechanism
  (replacing any earlier one); RemoveUserScramCredentialRecord removes an
  existing one.
- ClientQuotaRecord sets (or, with remove, unsets) one quota key of a
  client quota entity; an entity left without keys is dropped. A value
  or key AlterClientQuotas would refuse, or the removal of a key that is
  not set, is corrupt.
- MetadataRecordBatch (one controller decision in one Raft entry, so it
  commits whole or not at all) replays its records in order at the entry's
  offset; a batch inside a batch is corrupt.

A record that contradicts the image raises MetadataReplayError before the
image is touched: the log is corrupt and the node must stop. apply() also
requires strictly increasing offsets.

Memory: a PartitionState is one slotted object whose broker lists are
tuples shared between partitions (an RF-3 cluster of 30 brokers has at most
24,360 distinct replica lists, however many partitions it holds).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Optional, Sequence

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from kraftlog_api import metadata_pb2 as mpb
from security.acl import AclBinding, AclIndex
from security.client_quotas import InvalidQuotaError, QuotaEntity, check_quota_value
from security.scram_credentials import ScramCredential, ScramMechanism

from . import framing, quota_records, security_records

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    endpoints: tuple[Endpoint, ...]
    rack: Optional[str]
    fenced: bool
    in_controlled_shutdown: bool
    # (name, min, max) of each feature its software supports, as registered (metadata_quorum/features.py)
    features: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition; replaced (never mutated) on every change."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int = mpb.RECOVERED
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    # KIP-966: replicas out of the ISR that hold every committed record
    # (eligible leader replicas), and eligible ones that left by an unclean
    # shutdown (the last known ELR). Both are always replicas outside the ISR.
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def brokers(self) -> frozenset[int]:
        """Every broker this partition names: replicas, ISR, leader, adding and removing."""
        ids = set(self.replicas)
        ids.update(self.isr, self.removing_replicas, self.adding_replicas)
        ids.add(self.leader)
        ids.discard(NO_LEADER)
        return frozenset(ids)


@dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: bytes
    partitions: dict[int, PartitionState]


class MetadataReplayError(Exception):
    """A record contradicts the image: the log is corrupt and the node must stop."""


@dataclass(slots=True)
class MetadataDelta:
    """What a run of apply() calls changed, for listeners.

    It describes the difference between the image before and after: a
    topic created and removed within the same run appears in neither
    created_topics nor removed_topics, and changed_partitions never names a
    partition of a removed topic. A removed broker or config resource is
    listed as changed and is simply absent from the image.
    """

    changed_brokers: set[int] = field(default_factory=set)
    changed_partitions: set[tuple[bytes, int]] = field(default_factory=set)
    created_topics: set[bytes] = field(default_factory=set)
    removed_topics: dict[bytes, TopicImage] = field(default_factory=dict)
    changed_configs: set[tuple[int, str]] = field(default_factory=set)
    producer_ids_changed: bool = False
    changed_features: set[str] = field(default_factory=set)
    changed_acls: set[bytes] = field(default_factory=set)  # ids added or removed
    changed_scram_credentials: set[tuple[str, ScramMechanism]] = field(default_factory=set)
    changed_client_quotas: set[QuotaEntity] = field(default_factory=set)

    def is_empty(self) -> bool:
        return not (self.changed_brokers or self.changed_partitions or self.created_topics
                    or self.removed_topics or self.changed_configs or self.producer_ids_changed
                    or self.changed_features or self.changed_acls or self.changed_scram_credentials
                    or self.changed_client_quotas)


class _Corrupt(Exception):
    """Raised by a replay handler; apply() turns it into a MetadataReplayError naming the record."""


_INTERNED: dict[tuple[int, ...], tuple[int, ...]] = {}
_INTERN_LIMIT = 1 << 17


def _ids(values: Iterable[int]) -> tuple[int, ...]:
    """A tuple of broker ids, shared with every equal tuple made before (a bounded cache)."""
    ids = tuple(values)
    if not ids:
        return ()
    shared = _INTERNED.get(ids)
    if shared is None:
        if len(_INTERNED) >= _INTERN_LIMIT:
            _INTERNED.clear()
        _INTERNED[ids] = shared = ids
    return shared


class MetadataImage:
    """The metadata as of `offset`; see the module docstring for the replay rules."""

    __slots__ = ("offset", "brokers", "topics", "topic_ids", "configs", "features",
                 "next_producer_id", "acls", "scram_credentials", "client_quotas", "_by_broker",
                 "_acl_index")

    offset: int                                      # the last applied record; -1 when empty
    brokers: dict[int, BrokerRegistration]
    topics: dict[bytes, TopicImage]                  # by topic id
    topic_ids: dict[str, bytes]                      # name -> id
    configs: dict[tuple[int, str], dict[str, str]]   # (mpb.ConfigResourceType, name) -> settings
    features: dict[str, int]
    next_producer_id: int
    acls: dict[bytes, AclBinding]                    # by ACL id
    scram_credentials: dict[tuple[str, ScramMechanism], ScramCredential]  # by (user, mechanism)
    client_quotas: dict[QuotaEntity, dict[str, float]]  # entity -> key -> quota (no entity without keys)

    def __init__(self) -> None:
        self.offset = -1
        self.brokers = {}
        self.topics = {}
        self.topic_ids = {}
        self.configs = {}
        self.features = {}
        self.next_producer_id = 0
        self.acls = {}
        self.scram_credentials = {}
        self.client_quotas = {}
        # The ACLs indexed for decisions; built on first use after a change (acl_index()).
        self._acl_index: Optional[AclIndex] = None
        # broker id -> (topic id, partition id) of every partition naming it
        # (PartitionState.brokers()); the key tuple is shared by all its brokers.
        self._by_broker: dict[int, set[tuple[bytes, int]]] = {}

    # ---- replay ----

    def apply(self, record: mpb.MetadataRecord, offset: int,
              delta: Optional[MetadataDelta] = None) -> None:
        """Replay one record at `offset`, noting what changed in `delta`."""
        if offset <= self.offset:
            raise MetadataReplayError(
                f"metadata record at offset {offset}: offsets must grow, the image is at {self.offset}")
        self._replay(record, offset, delta)
        self.offset = offset

    def apply_decision(self, records: Sequence[mpb.MetadataRecord], offset: int) -> None:
        """Replay one decision's records, all at `offset`, as the one Raft
        entry decision_entry() makes of them replays (without its encoding)."""
        if offset <= self.offset:
            raise MetadataReplayError(
                f"metadata record at offset {offset}: offsets must grow, the image is at {self.offset}")
        for record in records:
            self._replay(record, offset, None)
        self.offset = offset

    def apply_bytes(self, data: bytes, offset: int,
                    delta: Optional[MetadataDelta] = None) -> None:
        """Parse one serialized MetadataRecord and apply it."""
        self.apply(_parse(data, offset), offset, delta)

    def _replay(self, record: mpb.MetadataRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        kind = record.WhichOneof("record")
        handler = _HANDLERS.get(kind) if kind else None
        if handler is None:
            raise MetadataReplayError(f"metadata record at offset {offset}: no known record type in {record!r}")
        try:
            handler(self, getattr(record, kind), offset, delta)
        except _Corrupt as exc:
            raise MetadataReplayError(
                f"metadata record at offset {offset} ({_describe(record)}): {exc}") from None

    def _register_broker(self, rec: mpb.RegisterBrokerRecord, offset: int,
                         delta: Optional[MetadataDelta]) -> None:
        self.brokers[rec.broker_id] = BrokerRegistration(
            broker_id=rec.broker_id,
            incarnation_id=rec.incarnation_id,
            broker_epoch=rec.broker_epoch,
            endpoints=tuple(Endpoint(e.name, e.host, e.port, e.security_protocol or "PLAINTEXT")
                            for e in rec.endpoints),
            rack=rec.rack if rec.HasField("rack") else None,
            fenced=rec.fenced,
            in_controlled_shutdown=rec.in_controlled_shutdown,
            features=tuple((f.name, f.min_supported_version, f.max_supported_version) for f in rec.features),
        )
        if delta is not None:
            delta.changed_brokers.add(rec.broker_id)

    def _registered(self, broker_id: int, broker_epoch: int) -> BrokerRegistration:
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise _Corrupt(f"broker {broker_id} is not registered")
        if broker.broker_epoch != broker_epoch:
            raise _Corrupt(f"broker {broker_id} has broker epoch {broker.broker_epoch}, not {broker_epoch}")
        return broker

    def _unregister_broker(self, rec: mpb.UnregisterBrokerRecord, offset: int,
                           delta: Optional[MetadataDelta]) -> None:
        self._registered(rec.broker_id, rec.broker_epoch)
        del self.brokers[rec.broker_id]
        if delta is not None:
            delta.changed_brokers.add(rec.broker_id)

    def _change_broker(self, rec: mpb.BrokerRegistrationChangeRecord, offset: int,
                       delta: Optional[MetadataDelta]) -> None:
        broker = self._registered(rec.broker_id, rec.broker_epoch)
        fenced = broker.fenced
        if rec.fenced == mpb.FENCE:
            fenced = True
        elif rec.fenced == mpb.UNFENCE:
            fenced = False
        elif rec.fenced != mpb.FENCING_UNCHANGED:
            raise _Corrupt(f"unknown fencing change {rec.fenced}")
        shutdown = broker.in_controlled_shutdown
        if rec.in_controlled_shutdown == mpb.IN_CONTROLLED_SHUTDOWN:
            shutdown = True
        elif rec.in_controlled_shutdown != mpb.CONTROLLED_SHUTDOWN_UNCHANGED:
            raise _Corrupt(f"unknown controlled shutdown change {rec.in_controlled_shutdown}")
        self.brokers[rec.broker_id] = replace(broker, fenced=fenced, in_controlled_shutdown=shutdown)
        if delta is not None:
            delta.changed_brokers.add(rec.broker_id)

    def _add_topic(self, rec: mpb.TopicRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        if not rec.name:
            raise _Corrupt("empty topic name")
        if len(rec.topic_id) != 16:
            raise _Corrupt(f"topic id of {len(rec.topic_id)} bytes, not 16")
        if rec.name in self.topic_ids:
            raise _Corrupt(f"topic {rec.name!r} already exists")
        if rec.topic_id in self.topics:
            raise _Corrupt(f"topic id {rec.topic_id.hex()} already belongs to {self.topics[rec.topic_id].name!r}")
        self.topics[rec.topic_id] = TopicImage(rec.name, rec.topic_id, {})
        self.topic_ids[rec.name] = rec.topic_id
        if delta is not None:
            delta.created_topics.add(rec.topic_id)

    def _known_topic(self, topic_id: bytes) -> TopicImage:
        topic = self.topics.get(topic_id)
        if topic is None:
            raise _Corrupt(f"unknown topic id {topic_id.hex()}")
        return topic

    def _add_partition(self, rec: mpb.PartitionRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        topic = self._known_topic(rec.topic_id)
        if rec.partition_id < 0:
            raise _Corrupt(f"negative partition id {rec.partition_id}")
        if rec.leader_recovery_state not in (mpb.RECOVERED, mpb.RECOVERING):
            raise _Corrupt(f"unknown leader recovery state {rec.leader_recovery_state}")
        state = PartitionState(
            replicas=_ids(rec.replicas),
            isr=_ids(rec.isr),
            leader=rec.leader,
            leader_epoch=rec.leader_epoch,
            partition_epoch=rec.partition_epoch,
            leader_recovery_state=rec.leader_recovery_state,
            removing_replicas=_ids(rec.removing_replicas),
            adding_replicas=_ids(rec.adding_replicas),
            elr=_ids(rec.eligible_leader_replicas),
            last_known_elr=_ids(rec.last_known_elr),
        )
        _check_eligible(state)
        self._set_partition(topic, rec.partition_id, state, delta)

    def _change_partition(self, rec: mpb.PartitionChangeRecord, offset: int,
                          delta: Optional[MetadataDelta]) -> None:
        topic = self._known_topic(rec.topic_id)
        old = topic.partitions.get(rec.partition_id)
        if old is None:
            raise _Corrupt(f"topic {topic.name!r} has no partition {rec.partition_id}")
        leader, leader_epoch = old.leader, old.leader_epoch
        if rec.HasField("leader") and rec.leader != old.leader:
            leader, leader_epoch = rec.leader, old.leader_epoch + 1
        recovery = old.leader_recovery_state
        if rec.HasField("leader_recovery_state"):
            recovery = rec.leader_recovery_state
            if recovery not in (mpb.RECOVERED, mpb.RECOVERING):
                raise _Corrupt(f"unknown leader recovery state {recovery}")
        state = PartitionState(
            replicas=_ids(rec.replicas.ids) if rec.HasField("replicas") else old.replicas,
            isr=_ids(rec.isr.ids) if rec.HasField("isr") else old.isr,
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=old.partition_epoch + 1,
            leader_recovery_state=recovery,
            removing_replicas=(_ids(rec.removing_replicas.ids) if rec.HasField("removing_replicas")
                               else old.removing_replicas),
            adding_replicas=(_ids(rec.adding_replicas.ids) if rec.HasField("adding_replicas")
                             else old.adding_replicas),
            elr=_ids(rec.eligible_leader_replicas.ids) if rec.HasField("eligible_leader_replicas") else old.elr,
            last_known_elr=(_ids(rec.last_known_elr.ids) if rec.HasField("last_known_elr")
                            else old.last_known_elr),
        )
        _check_eligible(state)
        self._set_partition(topic, rec.partition_id, state, delta)

    def _set_partition(self, topic: TopicImage, partition_id: int, state: PartitionState,
                       delta: Optional[MetadataDelta]) -> None:
        old = topic.partitions.get(partition_id)
        key = (topic.topic_id, partition_id)
        before = old.brokers() if old is not None else frozenset()
        after = state.brokers()
        for broker_id in before - after:
            self._unindex(broker_id, key)
        for broker_id in after - before:
            self._by_broker.setdefault(broker_id, set()).add(key)
        topic.partitions[partition_id] = state
        if delta is not None:
            delta.changed_partitions.add(key)

    def _unindex(self, broker_id: int, key: tuple[bytes, int]) -> None:
        keys = self._by_broker[broker_id]
        keys.discard(key)
        if not keys:
            del self._by_broker[broker_id]

    def _remove_topic(self, rec: mpb.RemoveTopicRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        topic = self._known_topic(rec.topic_id)
        for partition_id, state in topic.partitions.items():
            key = (topic.topic_id, partition_id)
            for broker_id in state.brokers():
                self._unindex(broker_id, key)
            if delta is not None:
                delta.changed_partitions.discard(key)
        del self.topics[topic.topic_id]
        del self.topic_ids[topic.name]
        config_key = (mpb.TOPIC, topic.name)
        had_config = self.configs.pop(config_key, None) is not None
        if delta is not None:
            if topic.topic_id in delta.created_topics:
                delta.created_topics.discard(topic.topic_id)
            else:
                delta.removed_topics[topic.topic_id] = topic
            if had_config:
                delta.changed_configs.add(config_key)

    def _set_config(self, rec: mpb.ConfigRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        if rec.resource_type not in (mpb.TOPIC, mpb.BROKER):
            raise _Corrupt(f"unknown config resource type {rec.resource_type}")
        if rec.resource_type == mpb.TOPIC and not rec.resource_name:
            raise _Corrupt("topic config without a topic name")
        if not rec.name:
            raise _Corrupt("empty config name")
        key = (rec.resource_type, rec.resource_name)
        if rec.HasField("value"):
            self.configs.setdefault(key, {})[rec.name] = rec.value
        else:
            settings = self.configs.get(key)
            if settings is not None:
                settings.pop(rec.name, None)
                if not settings:
                    del self.configs[key]
        if delta is not None:
            delta.changed_configs.add(key)

    def _set_feature(self, rec: mpb.FeatureLevelRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        if not rec.name:
            raise _Corrupt("empty feature name")
        if rec.feature_level < 0:
            raise _Corrupt(f"negative feature level {rec.feature_level}")
        if rec.feature_level == 0:
            self.features.pop(rec.name, None)
        else:
            self.features[rec.name] = rec.feature_level
        if delta is not None:
            delta.changed_features.add(rec.name)

    def _no_op(self, rec: mpb.NoOpRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        pass

    def _apply_batch(self, rec: mpb.MetadataRecordBatch, offset: int,
                     delta: Optional[MetadataDelta]) -> None:
        for inner in rec.records:
            if inner.WhichOneof("record") == "batch":
                raise _Corrupt("a batch holds another batch")
            self._replay(inner, offset, delta)

    def _add_acl(self, rec: mpb.AccessControlEntryRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        if len(rec.id) != security_records.ACL_ID_BYTES:
            raise _Corrupt(f"ACL id of {len(rec.id)} bytes, not {security_records.ACL_ID_BYTES}")
        if rec.id in self.acls:
            raise _Corrupt(f"ACL id {rec.id.hex()} already exists")
        try:
            binding = security_records.binding_from_record(rec)
        except ValueError as exc:
            raise _Corrupt(f"invalid ACL: {exc}") from None
        self.acls[rec.id] = binding
        self._acls_changed(rec.id, delta)

    def _remove_acl(self, rec: mpb.RemoveAccessControlEntryRecord, offset: int,
                    delta: Optional[MetadataDelta]) -> None:
        if self.acls.pop(rec.id, None) is None:
            raise _Corrupt(f"unknown ACL id {rec.id.hex()}")
        self._acls_changed(rec.id, delta)

    def _acls_changed(self, acl_id: bytes, delta: Optional[MetadataDelta]) -> None:
        self._acl_index = None
        if delta is not None:
            # Added then removed in one run: no net change.
            if acl_id in delta.changed_acls:
                delta.changed_acls.discard(acl_id)
            else:
                delta.changed_acls.add(acl_id)

    def _set_scram_credential(self, rec: mpb.UserScramCredentialRecord, offset: int,
                              delta: Optional[MetadataDelta]) -> None:
        try:
            credential = security_records.credential_from_record(rec)
        except ValueError as exc:
            raise _Corrupt(f"invalid SCRAM credential: {exc}") from None
        key = (rec.name, credential.mechanism)
        self.scram_credentials[key] = credential
        if delta is not None:
            delta.changed_scram_credentials.add(key)

    def _remove_scram_credential(self, rec: mpb.RemoveUserScramCredentialRecord, offset: int,
                                 delta: Optional[MetadataDelta]) -> None:
        try:
            key = (rec.name, security_records.mechanism_from_code(rec.mechanism))
        except ValueError as exc:
            raise _Corrupt(str(exc)) from None
        if self.scram_credentials.pop(key, None) is None:
            raise _Corrupt(f"user {rec.name!r} has no {key[1].mechanism_name} credential")
        if delta is not None:
            delta.changed_scram_credentials.add(key)

    def _set_client_quota(self, rec: mpb.ClientQuotaRecord, offset: int, delta: Optional[MetadataDelta]) -> None:
        try:
            entity = quota_records.entity_of(rec.entity)
            if not rec.remove:
                check_quota_value(rec.key, rec.value)
        except InvalidQuotaError as exc:
            raise _Corrupt(f"invalid client quota: {exc}") from None
        quotas = self.client_quotas.get(entity, {})
        if rec.remove:
            if rec.key not in quotas:
                raise _Corrupt(f"client quota {rec.key} of {entity} is not set")
            del quotas[rec.key]
        else:
            quotas[rec.key] = rec.value
        if quotas:
            self.client_quotas[entity] = quotas
        else:
            self.client_quotas.pop(entity, None)
        if delta is not None:
            delta.changed_client_quotas.add(entity)

    def _set_producer_ids(self, rec: mpb.ProducerIdsRecord, offset: int,
                          delta: Optional[MetadataDelta]) -> None:
        if rec.next_producer_id < self.next_producer_id:
            raise _Corrupt(f"next producer id would move back from {self.next_producer_id}")
        self.next_producer_id = rec.next_producer_id
        if delta is not None:
            delta.producer_ids_changed = True

    # ---- queries ----

    def topic(self, name: str) -> Optional[TopicImage]:
        topic_id = self.topic_ids.get(name)
        return self.topics[topic_id] if topic_id is not None else None

    def partition(self, topic_id: bytes, partition_id: int) -> Optional[PartitionState]:
        topic = self.topics.get(topic_id)
        return topic.partitions.get(partition_id) if topic is not None else None

    def topic_config(self, name: str) -> dict[str, str]:
        """The topic's overrides only (a copy); cluster defaults are in cluster_config()."""
        return dict(self.configs.get((mpb.TOPIC, name), {}))

    def cluster_config(self) -> dict[str, str]:
        """The cluster-wide broker defaults (a copy)."""
        return dict(self.configs.get((mpb.BROKER, ""), {}))

    def broker_config(self, broker_id: int) -> dict[str, str]:
        """One broker's own dynamic settings (a copy; its cluster-wide defaults are in cluster_config())."""
        return dict(self.configs.get((mpb.BROKER, str(broker_id)), {}))

    def acl_index(self) -> AclIndex:
        """The ACLs indexed for an Authorizer: built once after each change
        of the ACLs, then shared (immutable) until the next one."""
        index = self._acl_index
        if index is None:
            index = self._acl_index = AclIndex(self.acls.values())
        return index

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> Optional[ScramCredential]:
        return self.scram_credentials.get((user, mechanism))

    def partitions_led_by(self, broker_id: int) -> Iterator[tuple[bytes, int, PartitionState]]:
        """(topic id, partition id, state) of the partitions `broker_id` leads, sorted by (topic id, partition id).

        Leaderless partitions (leader -1) are not indexed: partitions_led_by(-1) is empty.
        """
        return iter([found for found in self._naming(broker_id) if found[2].leader == broker_id])

    def partitions_with_replica(self, broker_id: int) -> Iterator[tuple[bytes, int, PartitionState]]:
        """(topic id, partition id, state) of the partitions with `broker_id` in their replicas, sorted likewise."""
        return iter([found for found in self._naming(broker_id) if broker_id in found[2].replicas])

    def _naming(self, broker_id: int) -> list[tuple[bytes, int, PartitionState]]:
        # Sorted, so that whatever a controller does with the result does not
        # depend on hash randomization. A list, so the caller may apply
        # records while it walks the result.
        topics = self.topics
        return [(tid, pid, topics[tid].partitions[pid])
                for tid, pid in sorted(self._by_broker.get(broker_id, ()))]

    def check_index(self) -> None:
        """Assert the broker -> partitions index matches the partitions (O(partitions): tests and simulator)."""
        expected: dict[int, set[tuple[bytes, int]]] = {}
        for tid, topic in self.topics.items():
            for pid, state in topic.partitions.items():
                for broker_id in state.brokers():
                    expected.setdefault(broker_id, set()).add((tid, pid))
        assert expected == self._by_broker, "broker -> partitions index out of step"
        assert self.topic_ids == {t.name: tid for tid, t in self.topics.items()}, "topic name index out of step"

    # ---- snapshots ----

    def to_records(self) -> Iterator[mpb.MetadataRecord]:
        """The image as records that rebuild it: features, configs, brokers, topics, producer ids,
        ACLs, SCRAM credentials, client quotas."""
        for name, level in self.features.items():
            yield mpb.MetadataRecord(feature_level=mpb.FeatureLevelRecord(name=name, feature_level=level))
        for (resource_type, resource_name), settings in self.configs.items():
            for name, value in settings.items():
                yield mpb.MetadataRecord(config=mpb.ConfigRecord(
                    resource_type=resource_type, resource_name=resource_name, name=name, value=value))
        for broker in self.brokers.values():
            rec = mpb.RegisterBrokerRecord(
                broker_id=broker.broker_id,
                incarnation_id=broker.incarnation_id,
                broker_epoch=broker.broker_epoch,
                endpoints=[mpb.BrokerEndpoint(name=e.name, host=e.host, port=e.port,
                                              security_protocol=e.security_protocol)
                           for e in broker.endpoints],
                fenced=broker.fenced,
                in_controlled_shutdown=broker.in_controlled_shutdown,
                features=[mpb.FeatureRange(name=name, min_supported_version=low, max_supported_version=high)
                          for name, low, high in broker.features],
            )
            if broker.rack is not None:
                rec.rack = broker.rack
            yield mpb.MetadataRecord(register_broker=rec)
        for topic in self.topics.values():
            yield mpb.MetadataRecord(topic=mpb.TopicRecord(name=topic.name, topic_id=topic.topic_id))
            for partition_id, p in topic.partitions.items():
                yield mpb.MetadataRecord(partition=mpb.PartitionRecord(
                    partition_id=partition_id,
                    topic_id=topic.topic_id,
                    replicas=p.replicas,
                    isr=p.isr,
                    removing_replicas=p.removing_replicas,
                    adding_replicas=p.adding_replicas,
                    leader=p.leader,
                    leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch,
                    leader_recovery_state=p.leader_recovery_state,
                    eligible_leader_replicas=p.elr,
                    last_known_elr=p.last_known_elr,
                ))
        if self.next_producer_id:
            yield mpb.MetadataRecord(producer_ids=mpb.ProducerIdsRecord(
                broker_id=NO_LEADER, next_producer_id=self.next_producer_id))
        for acl_id, binding in self.acls.items():
            yield security_records.acl_record(acl_id, binding)
        for (user, _), credential in self.scram_credentials.items():
            yield security_records.scram_record(user, credential)
        for entity, quotas in self.client_quotas.items():
            for key, value in quotas.items():
                yield quota_records.quota_record(entity, key, value)

    def snapshot(self) -> bytes:
        """to_records() and the offset, in the layout described in framing.py."""
        return framing.encode(self.offset, (r.SerializeToString() for r in self.to_records()))

    @classmethod
    def from_snapshot(cls, data: bytes) -> "MetadataImage":
        """The image snapshot() wrote; MetadataReplayError if `data` is not one."""
        try:
            offset, records = framing.decode(data)
        except framing.FramingError as exc:
            raise MetadataReplayError(f"bad image snapshot: {exc}") from None
        image = cls()
        for data in records:
            image._replay(_parse(data, offset), offset, None)
        image.offset = offset
        return image

    def copy(self) -> "MetadataImage":
        """An independent image equal to this one, made without a snapshot's
        encode and replay: the active controller's working image, which takes
        its decisions' records before they commit (controller_service.py).
        Every container is copied; the immutable values in them (partition
        states, registrations, ACL bindings, credentials) are shared."""
        other = MetadataImage()
        other.offset = self.offset
        other.brokers = dict(self.brokers)
        other.topics = {tid: TopicImage(t.name, t.topic_id, dict(t.partitions)) for tid, t in self.topics.items()}
        other.topic_ids = dict(self.topic_ids)
        other.configs = {key: dict(settings) for key, settings in self.configs.items()}
        other.features = dict(self.features)
        other.next_producer_id = self.next_producer_id
        other.acls = dict(self.acls)
        other.scram_credentials = dict(self.scram_credentials)
        other.client_quotas = {entity: dict(quotas) for entity, quotas in self.client_quotas.items()}
        other._acl_index = self._acl_index
        other._by_broker = {broker_id: set(keys) for broker_id, keys in self._by_broker.items()}
        return other

    # ---- plumbing ----

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetadataImage):
            return NotImplemented
        return (self.offset == other.offset and self.brokers == other.brokers
                and self.topics == other.topics and self.topic_ids == other.topic_ids
                and self.configs == other.configs and self.features == other.features
                and self.next_producer_id == other.next_producer_id
                and self.acls == other.acls and self.scram_credentials == other.scram_credentials
                and self.client_quotas == other.client_quotas)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        partitions = sum(len(t.partitions) for t in self.topics.values())
        return (f"MetadataImage(offset={self.offset}, brokers={len(self.brokers)}, "
                f"topics={len(self.topics)}, partitions={partitions})")


def _check_eligible(state: PartitionState) -> None:
    """KIP-966's shape: the ELR and the last known ELR hold replicas outside the ISR, each once."""
    for name, ids in (("eligible leader replicas", state.elr), ("last known ELR", state.last_known_elr)):
        if not ids:
            continue
        if len(set(ids)) != len(ids) or not set(ids) <= set(state.replicas) or set(ids) & set(state.isr):
            raise _Corrupt(f"{name} {list(ids)} are not distinct replicas {list(state.replicas)} outside "
                           f"the ISR {list(state.isr)}")


def _parse(data: bytes, offset: int) -> mpb.MetadataRecord:
    try:
        return mpb.MetadataRecord.FromString(data)
    except DecodeError as exc:
        raise MetadataReplayError(f"metadata record at offset {offset} does not parse: {exc}") from None


def _redacted(record: mpb.MetadataRecord) -> mpb.MetadataRecord:
    """`record` without SCRAM salts and keys: not the password, but secrets
    all the same, so never in an error message."""
    kind = record.WhichOneof("record")
    if kind not in ("user_scram_credential", "batch"):
        return record
    copy = mpb.MetadataRecord()
    copy.CopyFrom(record)
    scrams = ([copy.user_scram_credential] if kind == "user_scram_credential" else
              [r.user_scram_credential for r in copy.batch.records if r.HasField("user_scram_credential")])
    for scram in scrams:
        for name in ("salt", "stored_key", "server_key"):
            scram.ClearField(name)  # type: ignore[arg-type]
    return copy


def _describe(record: mpb.MetadataRecord, limit: int = 300) -> str:
    text = text_format.MessageToString(_redacted(record), as_one_line=True)
    return text if len(text) <= limit else text[:limit] + "..."


_HANDLERS: dict[str, Callable[[MetadataImage, object, int, Optional[MetadataDelta]], None]] = {
    "register_broker": MetadataImage._register_broker,
    "unregister_broker": MetadataImage._unregister_broker,
    "broker_registration_change": MetadataImage._change_broker,
    "topic": MetadataImage._add_topic,
    "partition": MetadataImage._add_partition,
    "partition_change": MetadataImage._change_partition,
    "remove_topic": MetadataImage._remove_topic,
    "config": MetadataImage._set_config,
    "feature_level": MetadataImage._set_feature,
    "no_op": MetadataImage._no_op,
    "producer_ids": MetadataImage._set_producer_ids,
    "batch": MetadataImage._apply_batch,
    "access_control_entry": MetadataImage._add_acl,
    "remove_access_control_entry": MetadataImage._remove_acl,
    "user_scram_credential": MetadataImage._set_scram_credential,
    "remove_user_scram_credential": MetadataImage._remove_scram_credential,
    "client_quota": MetadataImage._set_client_quota,
}


def decision_entry(records: Sequence[mpb.MetadataRecord]) -> bytes:
    """One controller decision's records as the data of one Raft entry: a
    lone record as itself, several as a MetadataRecordBatch, so a decision is
    never split across entries (and so never half-committed by a leader that
    had fetched only part of it)."""
    if len(records) == 1:
        return records[0].SerializeToString()
    return mpb.MetadataRecord(batch=mpb.MetadataRecordBatch(records=records)).SerializeToString()
