"""Broker lifecycle: registration, heartbeats, fencing, controlled shutdown.

A broker registers fenced. It is unfenced once a heartbeat shows it has
applied the metadata log up to its own registration. It is fenced again
when its session expires (no valid heartbeat for
`broker.session.timeout.ms`), when it asks to be, or when it registers
anew (a restart: a new incarnation may have lost data). A fenced or
shutting-down broker leaves every leadership and ISR (see
`partitions.move_away`) in the same batch of records.

KIP-966 (`eligible.leader.replicas.version` 1): a new incarnation whose
`previous_broker_epoch` (the epoch its clean-shutdown marker holds) is not
the epoch of its registration shut down uncleanly, and leaves every ISR
and ELR (`partitions.shut_down_uncleanly`). The same incarnation
registering again (its registration was lost) is the same process: no
shutdown at all.
"""

from __future__ import annotations

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.features import elr_enabled
from metadata_quorum.image import MetadataImage

from .controller_config import ControllerConfig
from .errors import ControllerError, Error
from .features import check_registration
from .heartbeats import BrokerHeartbeats
from .partitions import check_broker_epoch, elect_offline, move_away, shut_down_uncleanly
from .result import ControllerResult

MAX_PORT = 65535


def register(
    image: MetadataImage, config: ControllerConfig, heartbeats: BrokerHeartbeats, cluster_id: str,
    request: cpb.BrokerRegistrationRequest, now_ms: int, node_id: int,
) -> ControllerResult:
    """A RegisterBrokerRecord (fenced); a previous registration's partitions move away first.

    The broker epoch is image.offset + 1: the offset the record gets when
    nothing else (a Raft control record, say) lands between the image and
    it. Either way it is larger than every earlier epoch of the broker,
    because the image includes the broker's earlier registrations.
    """
    response = cpb.BrokerRegistrationResponse(controller_id=node_id)
    try:
        _validate_registration(image, heartbeats, cluster_id, request, now_ms)
    except ControllerError as exc:
        response.error_code = exc.error
        response.error_message = exc.message
        return ControllerResult([], response)
    broker_id = request.broker_id
    epoch = image.offset + 1
    record = mpb.RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=request.incarnation_id,
        broker_epoch=epoch,
        endpoints=request.listeners,
        fenced=True,
        features=request.features,
    )
    if request.HasField("rack"):
        record.rack = request.rack
    records = [mpb.MetadataRecord(register_broker=record)]
    if elr_enabled(image.features) and unclean_shutdown(image, request):
        records += shut_down_uncleanly(image, config, broker_id)
    elif broker_id in image.brokers:
        records += move_away(image, config, {broker_id})
    heartbeats.touch(broker_id, now_ms)
    response.broker_epoch = epoch
    return ControllerResult(records, response)


def unclean_shutdown(image: MetadataImage, request: cpb.BrokerRegistrationRequest) -> bool:
    """Whether `request` comes from a new incarnation that did not shut down
    cleanly as the registered one: its previous_broker_epoch (-1 when absent)
    is not that registration's epoch, or nothing of the broker is registered
    to compare with (an unregistered broker may still be in ISRs). Any value
    is taken; only the registration's own epoch counts as clean."""
    existing = image.brokers.get(request.broker_id)
    if existing is not None and existing.incarnation_id == request.incarnation_id:
        return False
    previous = request.previous_broker_epoch if request.HasField("previous_broker_epoch") else -1
    return existing is None or previous != existing.broker_epoch


def _validate_registration(
    image: MetadataImage, heartbeats: BrokerHeartbeats, cluster_id: str,
    request: cpb.BrokerRegistrationRequest, now_ms: int,
) -> None:
    if request.cluster_id != cluster_id:
        raise ControllerError(
            Error.INCONSISTENT_CLUSTER_ID, f"cluster id {request.cluster_id!r}, this cluster is {cluster_id!r}")
    if request.broker_id < 0:
        raise ControllerError(Error.INVALID_REQUEST, f"broker id {request.broker_id} is negative")
    if not request.incarnation_id:
        raise ControllerError(Error.INVALID_REQUEST, "no incarnation id")
    for listener in request.listeners:
        if not listener.name or not 0 <= listener.port <= MAX_PORT:
            raise ControllerError(Error.INVALID_REQUEST, f"bad listener {listener.name!r} port {listener.port}")
    check_registration(image, request)
    existing = image.brokers.get(request.broker_id)
    if (existing is not None and existing.incarnation_id != request.incarnation_id
            and not existing.fenced and not heartbeats.session_expired(request.broker_id, now_ms)):
        raise ControllerError(
            Error.DUPLICATE_BROKER_REGISTRATION,
            f"broker {request.broker_id} is live with incarnation {existing.incarnation_id}")


def heartbeat(
    image: MetadataImage, config: ControllerConfig, heartbeats: BrokerHeartbeats,
    request: cpb.BrokerHeartbeatRequest, now_ms: int, node_id: int,
) -> ControllerResult:
    """Keep the session; unfence a caught-up broker; fence or start a controlled shutdown on request.

    should_shut_down: a fenced broker may stop at once; a broker in
    controlled shutdown once it leads nothing, and it is fenced then.
    """
    response = cpb.BrokerHeartbeatResponse(controller_id=node_id)
    broker_id = request.broker_id
    try:
        check_broker_epoch(image, broker_id, request.broker_epoch)
    except ControllerError as exc:
        response.error_code = exc.error
        response.error_message = exc.message
        return ControllerResult([], response)
    heartbeats.touch(broker_id, now_ms)
    broker = image.brokers[broker_id]
    caught_up = request.current_metadata_offset >= broker.broker_epoch
    records: list[mpb.MetadataRecord] = []
    fenced = broker.fenced
    should_shut_down = False
    if broker.fenced:
        if request.want_shut_down:
            should_shut_down = True
        elif caught_up and not request.want_fence and not broker.in_controlled_shutdown:
            records.append(_change(broker_id, broker.broker_epoch, fenced=mpb.UNFENCE))
            records += elect_offline(image, config, broker_id)
            fenced = False
    elif request.want_fence:
        records.append(_change(broker_id, broker.broker_epoch, fenced=mpb.FENCE))
        records += move_away(image, config, {broker_id})
        fenced = True
        should_shut_down = request.want_shut_down
    elif request.want_shut_down or broker.in_controlled_shutdown:
        starting = not broker.in_controlled_shutdown
        if starting:
            records += move_away(image, config, {broker_id})
        # Once those records commit it leads nothing. A broker that led
        # something hears so on its next heartbeat, when its partitions'
        # new leaders are known; then it is fenced, so that its next
        # incarnation may register at once.
        should_shut_down = next(image.partitions_led_by(broker_id), None) is None
        if starting or should_shut_down:
            records.insert(0, _change(
                broker_id, broker.broker_epoch,
                fenced=mpb.FENCE if should_shut_down else mpb.FENCING_UNCHANGED,
                shutdown=mpb.IN_CONTROLLED_SHUTDOWN if starting else mpb.CONTROLLED_SHUTDOWN_UNCHANGED))
            fenced = should_shut_down
    response.is_caught_up = caught_up
    response.is_fenced = fenced
    response.should_shut_down = should_shut_down
    return ControllerResult(records, response)


def unregister(image: MetadataImage, config: ControllerConfig, request: cpb.UnregisterBrokerRequest,
               node_id: int) -> ControllerResult:
    """Kafka's UnregisterBroker: the broker leaves every ISR and leadership,
    then its registration goes (UnregisterBrokerRecord).

    Allowed whatever the broker's state, as in Kafka: decommissioning is
    moving its replicas away first (reassignment), shutting it down, then
    this. A broker still running registers again at its next heartbeat.
    Replica lists still naming it are left as they are (Kafka leaves them
    too): those partitions stay under-replicated until they are reassigned.
    """
    response = cpb.UnregisterBrokerResponse(controller_id=node_id)
    broker = image.brokers.get(request.broker_id)
    if broker is None:
        response.error_code = Error.BROKER_ID_NOT_REGISTERED
        response.error_message = f"Broker ID {request.broker_id} is not currently registered"
        return ControllerResult([], response)
    records = move_away(image, config, {request.broker_id})
    records.append(mpb.MetadataRecord(unregister_broker=mpb.UnregisterBrokerRecord(
        broker_id=request.broker_id, broker_epoch=broker.broker_epoch)))
    return ControllerResult(records, response)


def fence_expired(
    image: MetadataImage, config: ControllerConfig, heartbeats: BrokerHeartbeats, now_ms: int
) -> list[mpb.MetadataRecord]:
    """Fence every unfenced broker whose session ran out, and move its partitions away."""
    unfenced = [b.broker_id for b in image.brokers.values() if not b.fenced]
    expired = list(heartbeats.expired(unfenced, now_ms))
    if not expired:
        return []
    records = [_change(b, image.brokers[b].broker_epoch, fenced=mpb.FENCE) for b in expired]
    return records + move_away(image, config, set(expired))


def _change(broker_id: int, broker_epoch: int, fenced: int = mpb.FENCING_UNCHANGED,
            shutdown: int = mpb.CONTROLLED_SHUTDOWN_UNCHANGED) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(broker_registration_change=mpb.BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, fenced=fenced,  # type: ignore[arg-type]
        in_controlled_shutdown=shutdown))  # type: ignore[arg-type]
