"""Broker lifecycle: registration, heartbeats, session expiry, controlled shutdown, rebalancing, failover."""

from __future__ import annotations

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import NO_LEADER, ControllerConfig, Error

from .test_controller_harness import CLUSTER, CONTROLLER_ID, Harness, kinds

SESSION = 9000


# --- registration ---------------------------------------------------------------------------

def test_a_broker_registers_fenced_with_the_offset_of_its_record_as_epoch() -> None:
    h = Harness()
    h.register(0)
    response = h.register(1, rack="r1", unfence=False)
    assert response.error_code == Error.NONE and response.controller_id == CONTROLLER_ID
    record = h.last.records[0].register_broker  # type: ignore[union-attr]
    assert response.broker_epoch == record.broker_epoch == h.image.offset
    broker = h.image.brokers[1]
    assert broker.fenced and broker.rack == "r1" and broker.broker_epoch == response.broker_epoch
    assert broker.endpoints[0].port == 9093


def test_a_registration_for_another_cluster_is_refused() -> None:
    h = Harness()
    response = h.register(0, cluster_id="other")
    assert response.error_code == Error.INCONSISTENT_CLUSTER_ID and "other" in response.error_message
    assert not h.last.records and not h.image.brokers  # type: ignore[union-attr]


def test_malformed_registrations_are_invalid_requests() -> None:
    h = Harness()
    assert h.register(-1).error_code == Error.INVALID_REQUEST
    no_incarnation = cpb.BrokerRegistrationRequest(broker_id=1, cluster_id=CLUSTER, incarnation_id="")
    bad_port = cpb.BrokerRegistrationRequest(broker_id=1, cluster_id=CLUSTER, incarnation_id="x", listeners=[
        mpb.BrokerEndpoint(name="PLAINTEXT", host="localhost", port=70000)])
    for request in (no_incarnation, bad_port):
        result = h.controller.handle_registration(request, 0)
        assert result.response.error_code == Error.INVALID_REQUEST and not result.records


def test_a_live_broker_id_cannot_be_taken_by_another_incarnation() -> None:
    h = Harness()
    h.register(0, incarnation="first")
    response = h.register(0, incarnation="second")
    assert response.error_code == Error.DUPLICATE_BROKER_REGISTRATION
    assert h.image.brokers[0].incarnation_id == "first"
    # Once its session has expired the id is free again.
    h.now = SESSION + 1
    assert h.register(0, incarnation="second").error_code == Error.NONE
    assert h.image.brokers[0].incarnation_id == "second"


def test_a_fenced_broker_id_may_be_taken_by_a_new_incarnation() -> None:
    h = Harness()
    h.register(0, incarnation="first", unfence=False)
    assert h.register(0, incarnation="second").error_code == Error.NONE


def test_a_retried_registration_gets_a_new_epoch_and_the_old_one_goes_stale() -> None:
    h = Harness()
    first = h.register(0).broker_epoch
    second = h.register(0).broker_epoch
    assert second > first
    assert h.heartbeat(0, epoch=first).error_code == Error.STALE_BROKER_EPOCH


def test_a_restarted_broker_loses_its_leaderships_and_isr_places_at_registration() -> None:
    h = Harness()
    h.brokers(3)
    h.create("t", partitions=3, rf=3)
    led = [p for p in range(3) if h.state("t", p).leader == 1]
    h.now = SESSION + 1
    h.heartbeat_all(except_=[1])
    assert h.register(1, incarnation="after-crash", unfence=False).error_code == Error.NONE
    for p in range(3):
        state = h.state("t", p)
        assert state.leader != 1 and 1 not in state.isr
    assert led and all(h.state("t", p).leader_epoch == 1 for p in led)


# --- heartbeats -------------------------------------------------------------------------------

def test_heartbeats_from_unknown_or_stale_brokers_are_refused() -> None:
    h = Harness()
    assert h.heartbeat(7, epoch=0).error_code == Error.BROKER_ID_NOT_REGISTERED
    h.register(0)
    response = h.heartbeat(0, epoch=h.epochs[0] - 1)
    assert response.error_code == Error.STALE_BROKER_EPOCH and not h.last.records  # type: ignore[union-attr]


def test_a_broker_is_unfenced_once_caught_up_with_its_registration() -> None:
    h = Harness()
    h.register(0, unfence=False)
    behind = h.heartbeat(0, offset=h.epochs[0] - 1)
    assert behind.is_fenced and not behind.is_caught_up and not h.last.records  # type: ignore[union-attr]
    caught_up = h.heartbeat(0, offset=h.epochs[0])
    assert caught_up.is_caught_up and not caught_up.is_fenced
    assert kinds(h.last) == ["broker_registration_change"]
    assert not h.image.brokers[0].fenced
    again = h.heartbeat(0)
    assert not again.is_fenced and not h.last.records  # type: ignore[union-attr]


def test_a_broker_that_wants_to_stay_fenced_is_not_unfenced() -> None:
    h = Harness()
    h.register(0, unfence=False)
    assert h.heartbeat(0, want_fence=True).is_fenced
    assert h.image.brokers[0].fenced


def test_a_broker_asking_to_be_fenced_is_fenced_and_loses_its_leaderships() -> None:
    h = Harness()
    h.brokers(2)
    h.create("t", rf=2)
    leader = h.state("t").leader
    assert h.heartbeat(leader, want_fence=True).is_fenced
    assert h.image.brokers[leader].fenced
    assert h.state("t").leader == 1 - leader and h.state("t").isr == (1 - leader,)


def test_unfencing_brings_back_partitions_that_went_offline_with_it() -> None:
    h = Harness()
    h.brokers(2)
    h.create("t", rf=1, partitions=2)
    owner = h.state("t", 0).replicas[0]
    h.now = SESSION + 1
    h.heartbeat_all(except_=[owner])
    h.tick()
    assert h.state("t", 0).leader == NO_LEADER and h.state("t", 0).isr == (owner,)
    h.heartbeat(owner)
    assert kinds(h.last)[0] == "broker_registration_change"
    state = h.state("t", 0)
    assert state.leader == owner and state.leader_epoch == 2
    assert h.last.records[1].partition_change.election == mpb.ELECTION_CLEAN  # type: ignore[union-attr]


# --- session expiry -------------------------------------------------------------------------

def test_heartbeats_keep_a_session_alive() -> None:
    h = Harness()
    h.brokers(3)
    for now in range(1000, 60_000, 2000):
        h.now = now
        h.heartbeat_all()
        assert not h.tick().records
    assert not any(b.fenced for b in h.image.brokers.values())


def test_an_expired_session_fences_the_broker_and_moves_its_partitions() -> None:
    h = Harness()
    h.brokers(3)
    h.create("t", partitions=3, rf=3)
    h.create("solo", partitions=1, rf=1)
    solo_owner = h.state("solo").leader
    victim = solo_owner
    h.now = 5000
    h.heartbeat_all(except_=[victim])
    assert not h.tick(SESSION).records  # exactly at the timeout: still alive
    h.now = SESSION + 1
    result = h.tick()
    assert kinds(result)[0] == "broker_registration_change"
    assert result.records[0].broker_registration_change.fenced == mpb.FENCE
    assert h.image.brokers[victim].fenced
    for p in range(3):
        state = h.state("t", p)
        assert state.leader != victim and victim not in state.isr and state.leader in state.isr
        assert len(state.isr) == 2
    # Its only ISR member is gone: offline, the ISR kept for a clean return.
    assert h.state("solo").leader == NO_LEADER and h.state("solo").isr == (victim,)
    assert not h.tick(SESSION + 2).records  # fenced once


def test_a_heartbeat_that_arrived_keeps_the_session_before_it_is_decided() -> None:
    # The heartbeat reached the controller at 8000 but its decision waited in
    # the queue behind other decisions' commits: the session counts from 8000.
    h = Harness()
    h.brokers(2)
    h.now = 8000
    h.controller.heartbeat_arrived(cpb.BrokerHeartbeatRequest(broker_id=0, broker_epoch=h.epochs[0]), h.now)
    h.controller.heartbeat_arrived(cpb.BrokerHeartbeatRequest(broker_id=1, broker_epoch=h.epochs[1] + 1), h.now)
    h.now = SESSION + 1
    result = h.tick()
    fenced = [r.broker_registration_change.broker_id for r in result.records
              if r.WhichOneof("record") == "broker_registration_change"]
    assert fenced == [1]  # broker 0 kept alive; a stale broker epoch counts for nothing
    assert not h.image.brokers[0].fenced


def test_several_expired_brokers_are_fenced_in_one_consistent_batch() -> None:
    h = Harness()
    h.brokers(3)
    h.create("t", partitions=3, rf=3)
    h.now = 8000
    h.heartbeat(2)
    h.tick(SESSION + 1)
    assert h.image.brokers[0].fenced and h.image.brokers[1].fenced and not h.image.brokers[2].fenced
    for p in range(3):
        assert h.state("t", p).leader == 2 and h.state("t", p).isr == (2,)


def test_a_new_controller_gives_every_broker_a_fresh_session() -> None:
    h = Harness()
    h.brokers(2)
    h.now = 20_000
    h.failover()
    assert not h.tick(20_000 + SESSION).records
    assert h.tick(20_000 + SESSION + 1).records


# --- unclean elections on fencing ------------------------------------------------------------------

def _lose_the_isr(h: Harness) -> tuple[int, int]:
    """A topic with replicas [a, b] whose ISR shrank to [a]; then a's session expires."""
    h.brokers(2)
    h.create("t", rf=2)
    a, b = h.state("t").replicas
    assert h.alter("t", 0, [a]).topics[0].partitions[0].error_code == Error.NONE
    h.now = SESSION + 1
    h.heartbeat(b)
    h.tick()
    return a, b


def test_unclean_election_disabled_leaves_the_partition_offline() -> None:
    h = Harness()
    a, b = _lose_the_isr(h)
    assert h.state("t").leader == NO_LEADER and h.state("t").isr == (a,)


def test_unclean_election_enabled_for_the_cluster_elects_the_out_of_sync_replica() -> None:
    h = Harness()
    h.cluster_config("unclean.leader.election.enable", "true")
    a, b = _lose_the_isr(h)
    state = h.state("t")
    assert (state.leader, state.isr, state.leader_recovery_state) == (b, (b,), mpb.RECOVERING)
    changes = [r.partition_change for r in h.last.records if r.HasField("partition_change")]  # type: ignore[union-attr]
    assert changes[0].election == mpb.ELECTION_UNCLEAN


def test_enabling_unclean_election_later_brings_an_offline_partition_back_at_the_next_check() -> None:
    h = Harness(ControllerConfig(leader_imbalance_check_interval_seconds=60))
    a, b = _lose_the_isr(h)
    assert h.state("t").leader == NO_LEADER
    h.record(config=mpb.ConfigRecord(resource_type=mpb.TOPIC, resource_name="t",
                                     name="unclean.leader.election.enable", value="true"))
    h.now += 1000
    h.heartbeat(b)
    assert h.tick().records == [] and h.state("t").leader == NO_LEADER  # not due yet
    h.now = 60_001
    h.heartbeat(b)
    result = h.tick()
    assert h.state("t").leader == b and h.state("t").leader_recovery_state == mpb.RECOVERING
    assert [r.partition_change.election for r in result.records] == [mpb.ELECTION_UNCLEAN]


def test_unclean_election_by_the_static_config() -> None:
    h = Harness(ControllerConfig(unclean_leader_election_enable=True))
    a, b = _lose_the_isr(h)
    assert h.state("t").leader == b


def _leader_after_losing_the_isr(cluster: str, topic: str) -> int:
    """Cluster and topic unclean.leader.election.enable as given ("" = unset); who leads once the ISR is gone."""
    h = Harness()
    if cluster:
        h.cluster_config("unclean.leader.election.enable", cluster)
    h.brokers(2)
    h.create("t", rf=2, configs={"unclean.leader.election.enable": topic} if topic else None)
    a, b = h.state("t").replicas
    h.alter("t", 0, [a])
    h.now = SESSION + 1
    h.heartbeat(b)
    h.tick()
    return h.state("t").leader


def test_a_topic_setting_overrides_the_cluster_one() -> None:
    assert _leader_after_losing_the_isr(cluster="true", topic="false") == NO_LEADER
    assert _leader_after_losing_the_isr(cluster="false", topic="true") != NO_LEADER
    assert _leader_after_losing_the_isr(cluster="", topic="true") != NO_LEADER


# --- controlled shutdown ------------------------------------------------------------------------

def test_controlled_shutdown_moves_leadership_away_then_lets_the_broker_go() -> None:
    h = Harness()
    h.brokers(3)
    h.create("t", partitions=3, rf=3)
    h.create("solo", rf=1)
    victim = h.state("solo").leader
    first = h.heartbeat(victim, want_shut_down=True)
    assert not first.should_shut_down and not first.is_fenced
    assert h.image.brokers[victim].in_controlled_shutdown
    assert next(h.image.partitions_led_by(victim), None) is None
    for p in range(3):
        assert victim not in h.state("t", p).isr
    assert h.state("solo").leader == NO_LEADER and h.state("solo").isr == (victim,)
    # New partitions are not placed on it.
    h.create("later", partitions=4, rf=2)
    assert all(victim not in h.state("later", p).replicas for p in range(4))
    second = h.heartbeat(victim, want_shut_down=True)
    assert second.should_shut_down and second.is_fenced
    assert h.image.brokers[victim].fenced
    # Its next incarnation may register at once.
    assert h.register(victim, incarnation="next").error_code == Error.NONE


def test_a_broker_leading_nothing_may_shut_down_at_once() -> None:
    h = Harness()
    h.brokers(2)
    response = h.heartbeat(1, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced
    assert kinds(h.last) == ["broker_registration_change"]
    change = h.last.records[0].broker_registration_change  # type: ignore[union-attr]
    assert (change.fenced, change.in_controlled_shutdown) == (mpb.FENCE, mpb.IN_CONTROLLED_SHUTDOWN)


def test_a_fenced_broker_may_shut_down_at_once() -> None:
    h = Harness()
    h.register(0, unfence=False)
    response = h.heartbeat(0, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced and not h.last.records  # type: ignore[union-attr]


# --- automatic preferred-leader rebalance ---------------------------------------------------------

def _imbalanced(config: ControllerConfig) -> Harness:
    h = Harness(config)
    h.brokers(3)
    h.create("t", partitions=3, rf=3)
    preferred = h.state("t", 0).replicas[0]
    h.heartbeat(preferred, want_fence=True)
    h.heartbeat(preferred)  # back: unfenced, but leading nothing
    h.alter_back = preferred  # type: ignore[attr-defined]
    assert not h.image.brokers[preferred].fenced
    for p in range(3):  # leaders let it back into their ISRs
        state = h.state("t", p)
        if preferred not in state.isr:
            assert h.alter("t", p, list(state.isr) + [preferred]).topics[0].partitions[0].error_code == 0
    return h


def test_leaders_move_back_to_preferred_replicas_when_imbalanced() -> None:
    h = _imbalanced(ControllerConfig(leader_imbalance_check_interval_seconds=10))
    preferred = h.alter_back  # type: ignore[attr-defined]
    assert h.state("t", 0).leader != preferred
    h.now = 8000
    h.heartbeat_all()
    assert not h.tick(9_999).records  # not due yet
    result = h.tick(10_000)
    assert result.records and all(r.partition_change.election == mpb.ELECTION_PREFERRED for r in result.records)
    assert h.state("t", 0).leader == preferred


def test_no_rebalance_when_disabled_or_within_the_allowed_imbalance() -> None:
    h = _imbalanced(ControllerConfig(leader_imbalance_check_interval_seconds=10, auto_leader_rebalance_enable=False))
    h.now = 8000
    h.heartbeat_all()
    assert not h.tick(10_000).records
    h = _imbalanced(ControllerConfig(leader_imbalance_check_interval_seconds=10,
                                     leader_imbalance_per_broker_percentage=100))
    h.now = 8000
    h.heartbeat_all()
    assert not h.tick(10_000).records
