"""The active controller: a deterministic state machine over the metadata image.

Each handler validates one request against `image` and returns a
ControllerResult: the metadata records to append and the response to send
once they commit. Nothing here touches a clock, a socket, a disk or a
thread; time comes in as `now_ms` and randomness (topic ids) from the
injected `rng`, so a seed replays a run exactly.

The shell's contract:
- every decision must see every earlier one: the shell either waits until
  a result's records have committed and been replayed into `image` before
  it asks for the next decision, or applies appended records to `image`
  at once (as Kafka's controller works on its uncommitted state);
- it appends a result's records in order, as one batch, and sends the
  response only once they (and everything appended before) have committed;
- when this node stops being the Raft leader it drops this Controller
  and builds a new one from the committed image when it leads again.

Soft state, kept here and not in the log: broker sessions
(`BrokerHeartbeats`) and the time of the last automatic leader rebalance.
"""

from __future__ import annotations

import random
from typing import Optional, TypeVar

from google.protobuf.message import Message

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.features import ELIGIBLE_LEADER_REPLICAS
from metadata_quorum.image import MetadataImage

from . import (acls, brokers, client_quotas, dynamic_configs, features, partitions, reassignments, scram_credentials,
               topics)
from .controller_config import MIN_INSYNC_REPLICAS, ControllerConfig
from .errors import ControllerError, Error
from .heartbeats import BrokerHeartbeats
from .result import MAX_RECORDS_PER_USER_OP, ControllerResult, too_many_records

PRODUCER_ID_BLOCK_SIZE = 1000
LONG_MAX = 2**63 - 1

M = TypeVar("M", bound=Message)


class Controller:
    def __init__(
        self,
        image: MetadataImage,
        config: Optional[ControllerConfig] = None,
        *,
        cluster_id: str,
        node_id: int,
        now_ms: int,
        rng: Optional[random.Random] = None,
    ) -> None:
        """`now_ms`: when this node became the active controller; every broker's session starts then.

        `rng` draws topic ids; pass a seeded one for reproducible runs (the
        default is seeded by the OS, so clusters get unrelated ids).
        """
        self.image = image
        self.config = config or ControllerConfig()
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.rng = rng if rng is not None else random.Random()
        self.heartbeats = BrokerHeartbeats(self.config.broker_session_timeout_ms, now_ms)
        self.last_rebalance_ms = now_ms
        self.last_unclean_check_ms = now_ms

    # --- brokers ---------------------------------------------------------------------------

    def handle_registration(self, request: cpb.BrokerRegistrationRequest, now_ms: int) -> ControllerResult:
        return brokers.register(
            self.image, self.config, self.heartbeats, self.cluster_id, request, now_ms, self.node_id)

    def handle_heartbeat(self, request: cpb.BrokerHeartbeatRequest, now_ms: int) -> ControllerResult:
        return brokers.heartbeat(self.image, self.config, self.heartbeats, request, now_ms, self.node_id)

    def heartbeat_arrived(self, request: cpb.BrokerHeartbeatRequest, now_ms: int) -> None:
        """A heartbeat reached the controller at `now_ms`: the broker is alive
        then, even if deciding on it waits behind other decisions' commits.
        Only a heartbeat of the registered broker epoch counts."""
        broker = self.image.brokers.get(request.broker_id)
        if broker is not None and broker.broker_epoch == request.broker_epoch:
            self.heartbeats.touch(request.broker_id, now_ms)

    # --- partitions ------------------------------------------------------------------------

    def handle_alter_partition(self, request: cpb.AlterPartitionRequest) -> ControllerResult:
        return partitions.alter_partition(self.image, self.config, request, self.node_id)

    def handle_elect_leaders(self, request: cpb.ElectLeadersRequest) -> ControllerResult:
        # Elections of every partition (no partitions named) grow with the cluster.
        return self._capped(partitions.elect_leaders(self.image, self.config, request, self.node_id))

    def handle_alter_partition_reassignments(self, request: cpb.AlterPartitionReassignmentsRequest
                                             ) -> ControllerResult:
        return self._capped(reassignments.alter_partition_reassignments(
            self.image, request, self.node_id, partitions.eligibility(self.image, self.config)))

    def handle_list_partition_reassignments(self, request: cpb.ListPartitionReassignmentsRequest
                                            ) -> ControllerResult:
        return reassignments.list_partition_reassignments(self.image, request, self.node_id)

    def handle_unregister_broker(self, request: cpb.UnregisterBrokerRequest) -> ControllerResult:
        return brokers.unregister(self.image, self.config, request, self.node_id)

    # --- topics ----------------------------------------------------------------------------

    def handle_create_topics(self, request: cpb.CreateTopicsRequest) -> ControllerResult:
        return topics.create_topics(self.image, self.config, request, self._new_topic_id, self.node_id)

    def handle_delete_topics(self, request: cpb.DeleteTopicsRequest) -> ControllerResult:
        return topics.delete_topics(self.image, request, self.node_id)

    def handle_create_partitions(self, request: cpb.CreatePartitionsRequest) -> ControllerResult:
        return topics.create_partitions(self.image, request, self.node_id)

    # --- configs ---------------------------------------------------------------------------

    def handle_incremental_alter_configs(self, request: cpb.IncrementalAlterConfigsRequest) -> ControllerResult:
        result = dynamic_configs.incremental_alter_configs(self.image, request, self.node_id)
        result.records += self._elr_cleared_by(result.records)
        return self._capped(result)

    def _elr_cleared_by(self, records: list[mpb.MetadataRecord]) -> list[mpb.MetadataRecord]:
        """KIP-966: a new min.insync.replicas (a topic's, or a broker's or the
        cluster's default: every topic) or the feature turned off empties the
        ELRs it concerns: they were eligible under the old rule."""
        topics: set[bytes] = set()
        for record in records:
            kind = record.WhichOneof("record")
            if kind == "feature_level" and record.feature_level.name == ELIGIBLE_LEADER_REPLICAS:
                off = record.feature_level.feature_level == 0
                return partitions.clear_eligible(self.image, feature_off=True) if off else []
            if kind == "config" and record.config.name == MIN_INSYNC_REPLICAS:
                if record.config.resource_type != mpb.TOPIC:
                    return partitions.clear_eligible(self.image)
                topic_id = self.image.topic_ids.get(record.config.resource_name)
                if topic_id is not None:
                    topics.add(topic_id)
        return partitions.clear_eligible(self.image, topics) if topics else []

    # --- ACLs, SCRAM credentials, client quotas ----------------------------------------

    def handle_create_acls(self, request: cpb.CreateAclsRequest) -> ControllerResult:
        return self._capped(acls.create_acls(self.image, request, self._new_acl_id, self.node_id))

    def handle_delete_acls(self, request: cpb.DeleteAclsRequest) -> ControllerResult:
        return self._capped(acls.delete_acls(self.image, request, self.node_id))

    def handle_alter_user_scram_credentials(self, request: cpb.AlterUserScramCredentialsRequest) -> ControllerResult:
        return self._capped(scram_credentials.alter_user_scram_credentials(self.image, request, self.node_id))

    def handle_alter_client_quotas(self, request: cpb.AlterClientQuotasRequest) -> ControllerResult:
        return self._capped(client_quotas.alter_client_quotas(self.image, request, self.node_id))

    # --- feature levels (KIP-584, KIP-778) ------------------------------------------------

    def handle_update_features(self, request: cpb.UpdateFeaturesRequest) -> ControllerResult:
        result = features.update_features(self.image, request, self.node_id)
        result.records += self._elr_cleared_by(result.records)
        return result

    # --- producer ids ----------------------------------------------------------------------

    def handle_allocate_producer_ids(self, request: cpb.AllocateProducerIdsRequest) -> ControllerResult:
        """The next block of PRODUCER_ID_BLOCK_SIZE producer ids, for a registered broker."""
        response = cpb.AllocateProducerIdsResponse(controller_id=self.node_id)
        try:
            partitions.check_broker_epoch(self.image, request.broker_id, request.broker_epoch)
        except ControllerError as exc:
            response.error_code = exc.error
            return ControllerResult([], response)
        start = self.image.next_producer_id
        if start > LONG_MAX - PRODUCER_ID_BLOCK_SIZE:
            response.error_code = Error.UNKNOWN_SERVER_ERROR
            return ControllerResult([], response)
        record = mpb.ProducerIdsRecord(
            broker_id=request.broker_id, broker_epoch=request.broker_epoch,
            next_producer_id=start + PRODUCER_ID_BLOCK_SIZE)
        response.producer_id_start = start
        response.producer_id_len = PRODUCER_ID_BLOCK_SIZE
        return ControllerResult([mpb.MetadataRecord(producer_ids=record)], response)

    # --- the controller's own work ---------------------------------------------------------

    def tick(self, now_ms: int) -> ControllerResult:
        """Fence brokers whose session expired; otherwise, when due, elect
        leaders uncleanly where a topic allows it and nobody leads, or else
        rebalance leaders.

        A tick that fences does not rebalance too (its elections would be
        decided against brokers the same batch fences); the next one will.
        """
        records = brokers.fence_expired(self.image, self.config, self.heartbeats, now_ms)
        if records:
            return ControllerResult(records)
        if now_ms - self.last_unclean_check_ms >= self.config.leader_imbalance_check_interval_ms:
            self.last_unclean_check_ms = now_ms
            records = partitions.elect_unclean_offline(self.image, self.config)
            if records:
                return ControllerResult(records)
        if (self.config.auto_leader_rebalance_enable
                and now_ms - self.last_rebalance_ms >= self.config.leader_imbalance_check_interval_ms):
            self.last_rebalance_ms = now_ms
            records = partitions.rebalance(self.image, self.config)
        return ControllerResult(records)

    def _capped(self, result: ControllerResult) -> ControllerResult:
        """A user request that would write more than MAX_RECORDS_PER_USER_OP
        records is refused whole, at the request level, before anything is
        appended (the topic handlers refuse item by item, before placing)."""
        if len(result.records) <= MAX_RECORDS_PER_USER_OP:
            return result
        assert result.response is not None
        refusal = too_many_records(len(result.records))
        return ControllerResult([], error_response(type(result.response), refusal.error, self.node_id, refusal.message))

    def _new_topic_id(self, taken: set[bytes]) -> bytes:
        return self._new_uuid(taken, self.image.topics)

    def _new_acl_id(self, taken: set[bytes]) -> bytes:
        return self._new_uuid(taken, self.image.acls)

    def _new_uuid(self, taken: set[bytes], used: dict[bytes, object]) -> bytes:
        """A fresh non-zero 16-byte id (Kafka's Uuid), from the injected rng."""
        while True:
            new_id = self.rng.getrandbits(128).to_bytes(16, "big")
            if any(new_id) and new_id not in taken and new_id not in used:
                return new_id


def error_response(response_type: type[M], error: Error, controller_id: int, message: str = "") -> M:
    """A response of `response_type` carrying only a request-level error (e.g. NOT_CONTROLLER from a standby)."""
    response = response_type(error_code=error, controller_id=controller_id)
    if message and "error_message" in response.DESCRIPTOR.fields_by_name:
        response.error_message = message  # type: ignore[attr-defined]
    return response

