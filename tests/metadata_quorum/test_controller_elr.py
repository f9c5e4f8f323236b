"""KIP-966's eligible leader replicas and the unclean-shutdown rule, in the controller.

The pure rules first (elections.track_eligible, elect_leader's order), then
the controller over a real image (test_controller_harness): the feature
gate, AlterPartition shrinks, registrations after clean and unclean
shutdowns, the last known ELR, what empties the lists, and the records'
replay.
"""

from __future__ import annotations

from typing import Optional

import pytest

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import NO_LEADER, ControllerConfig, Election, Error, elect_leader
from metadata_quorum.controller.elections import track_eligible
from metadata_quorum.features import ELIGIBLE_LEADER_REPLICAS, elr_enabled
from metadata_quorum.image import MetadataImage, MetadataReplayError, PartitionState

from .test_controller_harness import Harness

SESSION = ControllerConfig().broker_session_timeout_ms


def partition(isr: tuple[int, ...], leader: int, elr: tuple[int, ...] = (), last_known: tuple[int, ...] = (),
              replicas: tuple[int, ...] = (1, 2, 3)) -> PartitionState:
    return PartitionState(replicas=replicas, isr=isr, leader=leader, leader_epoch=4, partition_epoch=9,
                          elr=elr, last_known_elr=last_known)


def live(*ids: int):  # type: ignore[no-untyped-def]
    return set(ids).__contains__


# --- the pure rules ------------------------------------------------------------------------------

def test_replicas_leaving_an_isr_below_min_isr_join_the_elr_and_not_above_it() -> None:
    state = partition((1, 2, 3), 1)
    to_two = track_eligible(state, Election(1, (1, 2), mpb.RECOVERED), min_isr=2)
    assert (to_two.elr, to_two.last_known_elr) == ((), ())  # still at min ISR: 3 may lack what commits next
    to_one = track_eligible(partition((1, 2), 1), Election(1, (1,), mpb.RECOVERED), min_isr=2)
    assert (to_one.elr, to_one.last_known_elr) == ((2,), ())
    off = track_eligible(partition((1, 2), 1, elr=(3,)), Election(1, (1,), mpb.RECOVERED), min_isr=None)
    assert (off.elr, off.last_known_elr) == ((), ())


def test_back_at_min_isr_the_elr_and_the_last_known_elr_empty() -> None:
    state = partition((1,), 1, elr=(2,), last_known=(3,))
    back = track_eligible(state, Election(1, (1, 2), mpb.RECOVERED), min_isr=2)
    assert (back.elr, back.last_known_elr) == ((), ())
    joined_below = track_eligible(state, Election(1, (1, 2), mpb.RECOVERED), min_isr=3)
    assert (joined_below.elr, joined_below.last_known_elr) == ((), (3,))  # 2 left the ELR for the ISR


def test_an_unclean_shutdown_moves_an_elr_member_to_the_last_known_elr() -> None:
    state = partition((1,), 1, elr=(2, 3))
    election = track_eligible(state, Election(1, (1,), mpb.RECOVERED), min_isr=2, unclean={3})
    assert (election.elr, election.last_known_elr) == ((2,), (3,))


def test_the_last_isr_member_back_uncleanly_empties_the_isr_and_is_the_last_known_leader() -> None:
    state = partition((1,), 1, elr=(2,))
    isr: tuple[int, ...] = ()
    election = track_eligible(state, elect_leader(state, live(), False, isr), min_isr=2, unclean={1})
    assert (election.leader, election.isr, election.elr, election.last_known_elr) == (NO_LEADER, (), (2,), (1,))
    # An unclean member leaving an ISR that keeps others is simply out (it is a follower with a short log).
    kept = track_eligible(partition((1, 2), 1), Election(2, (2,), mpb.RECOVERED), min_isr=3, unclean={1})
    assert (kept.elr, kept.last_known_elr) == ((), ())


def test_election_order_isr_then_elr_then_last_known_then_unclean() -> None:
    state = partition((1,), 1, elr=(3, 2))
    assert elect_leader(state, live(1, 2, 3), False).leader == 1
    from_elr = elect_leader(state, live(2, 3), False)  # 1 is down but stays in the ISR
    assert from_elr == Election(2, (2,), mpb.RECOVERED, mpb.ELECTION_ELR)  # replica order among the ELR
    empty = partition((), NO_LEADER, elr=(2,), last_known=(3, 1))
    assert elect_leader(empty, live(1, 3), False).leader == NO_LEADER  # an ELR member is still to come back
    gone = partition((), NO_LEADER, last_known=(3, 1))
    assert elect_leader(gone, live(1, 3), False) == Election(3, (3,), mpb.RECOVERING, mpb.ELECTION_LAST_KNOWN)
    assert elect_leader(gone, live(2), False).leader == NO_LEADER  # 2 is neither ISR, ELR nor last known
    assert elect_leader(gone, live(2), True) == Election(2, (2,), mpb.RECOVERING, mpb.ELECTION_UNCLEAN)


def test_last_known_and_unclean_elections_empty_both_lists() -> None:
    gone = partition((), NO_LEADER, last_known=(3, 1))
    election = track_eligible(gone, elect_leader(gone, live(1), False), min_isr=2)
    assert (election.leader, election.elr, election.last_known_elr) == (1, (), ())


# --- the controller ------------------------------------------------------------------------------

def upgrade(h: Harness, level: int = 1) -> cpb.UpdateFeaturesResponse:
    request = cpb.UpdateFeaturesRequest(feature_updates=[cpb.UpdateFeaturesRequest.FeatureUpdate(
        feature=ELIGIBLE_LEADER_REPLICAS, max_version_level=level, upgrade_type=1 if level else 2)])
    return h.apply(h.controller.handle_update_features(request))


def cluster(min_isr: int = 2, elr: bool = True) -> Harness:
    """Brokers 0, 1, 2; topic t of one partition on all three, led by 0, min.insync.replicas `min_isr`."""
    h = Harness()
    h.brokers(3)
    if elr:
        assert upgrade(h).error_code == Error.NONE and elr_enabled(h.image.features)
    assert h.create("t", rf=3, configs={"min.insync.replicas": str(min_isr)},
                    assignments=[[0, 1, 2]]).error_code == Error.NONE
    assert h.state("t").leader == 0
    return h


def set_min_isr(h: Harness, value: int) -> None:
    """Topic t's min.insync.replicas, through IncrementalAlterConfigs."""
    request = cpb.IncrementalAlterConfigsRequest(resources=[cpb.IncrementalAlterConfigsRequest.Resource(
        resource_type=mpb.TOPIC, resource_name="t", configs=[
            cpb.AlterableConfig(name="min.insync.replicas", op=0, value=str(value))])])
    assert h.apply(h.controller.handle_incremental_alter_configs(request)).results[0].error_code == Error.NONE


def shrink_to_leader(h: Harness) -> PartitionState:
    before = h.state("t")
    assert h.alter("t", 0, [0]).topics[0].partitions[0].error_code == Error.NONE
    after = h.state("t")
    assert after.leader_epoch == before.leader_epoch and after.partition_epoch == before.partition_epoch + 1
    return after


def empty_isr_by_the_leaders_crash(h: Harness) -> None:
    """Topic t shrunk to its leader 0, every session expired (all fenced; 0 stays
    the ISR), then 0 back from an unclean shutdown: the ISR empties, 1 and 2 are the ELR."""
    shrink_to_leader(h)
    h.now = SESSION + 1
    h.tick()
    restart(h, 0, clean=False)


def restart(h: Harness, broker_id: int, clean: bool, previous_epoch: Optional[int] = None) -> None:
    """A new incarnation registers once the old one's session ran out (the others' kept): after a
    clean shutdown its marker holds its epoch, else -1 (or `previous_epoch`)."""
    epoch = h.epochs[broker_id] if clean else (-1 if previous_epoch is None else previous_epoch)
    h.now += SESSION + 1
    for other, registration in sorted(h.image.brokers.items()):
        if other != broker_id and not registration.fenced:
            h.heartbeat(other)
    assert h.register(broker_id, incarnation=f"inc-{broker_id}-{h.image.offset}", unfence=False,
                      previous_epoch=epoch).error_code == Error.NONE


def test_the_feature_is_off_by_default_and_refused_while_a_broker_does_not_support_it() -> None:
    h = Harness()
    assert not elr_enabled(h.image.features)
    h.brokers(2)
    request = cpb.BrokerRegistrationRequest(broker_id=5, cluster_id="test-cluster", incarnation_id="old",
                                            listeners=[mpb.BrokerEndpoint(name="PLAINTEXT", host="h", port=1)])
    assert h.apply(h.controller.handle_registration(request, h.now)).error_code == Error.NONE  # lists no features
    refused = upgrade(h)
    assert refused.error_code == Error.INVALID_UPDATE_VERSION and "Broker 5" in refused.error_message
    assert not elr_enabled(h.image.features)


def test_an_alter_partition_below_min_isr_puts_the_leavers_in_the_elr() -> None:
    h = cluster()
    assert shrink_to_leader(h).elr == (1, 2)
    without = cluster(elr=False)
    assert shrink_to_leader(without).elr == ()


def test_the_last_isr_member_back_from_an_unclean_shutdown_hands_over_to_the_elr() -> None:
    h = cluster()
    shrink_to_leader(h)
    epoch = h.state("t").leader_epoch
    restart(h, 0, clean=False)
    state = h.state("t")
    assert (state.leader, state.isr, state.elr, state.last_known_elr) == (1, (1,), (2,), ())
    assert state.leader_epoch == epoch + 1 and state.leader_recovery_state == mpb.RECOVERED
    elected = [r.partition_change for r in h.last.records if r.WhichOneof("record") == "partition_change"]  # type: ignore[union-attr]
    assert [c.election for c in elected] == [mpb.ELECTION_ELR]


def test_the_leader_back_from_a_clean_shutdown_stays_eligible() -> None:
    h = cluster()
    shrink_to_leader(h)
    restart(h, 0, clean=True)
    state = h.state("t")  # 0 registers fenced: a live ELR member leads meanwhile, and 0 joins the ELR
    assert (state.leader, state.isr, state.elr, state.last_known_elr) == (1, (1,), (2, 0), ())


def test_without_the_feature_the_marker_is_not_read_and_the_last_member_stays() -> None:
    h = cluster(elr=False)
    shrink_to_leader(h)
    restart(h, 0, clean=False)
    state = h.state("t")
    assert (state.leader, state.isr) == (NO_LEADER, (0,))  # the pre-KIP-966 rule: it leads again on return
    h.heartbeat(0)
    assert h.state("t").leader == 0


def test_a_registration_of_the_same_incarnation_is_no_shutdown() -> None:
    h = cluster()
    shrink_to_leader(h)
    assert h.register(0, incarnation="inc-0", unfence=False, previous_epoch=-1).error_code == Error.NONE
    state = h.state("t")  # fenced as any registration, still eligible: its process never stopped
    assert (state.leader, state.elr, state.last_known_elr) == (1, (2, 0), ())


@pytest.mark.parametrize("previous", [-1, -5, -2**63, 2**62, 2**63 - 1, "another's"])
def test_any_other_previous_epoch_is_an_unclean_shutdown(previous: object) -> None:
    h = cluster()
    shrink_to_leader(h)
    restart(h, 0, clean=False, previous_epoch=h.epochs[1] if previous == "another's" else int(previous))  # type: ignore[call-overload]
    assert 0 not in h.state("t").isr and 0 not in h.state("t").elr


def test_an_elr_member_back_uncleanly_moves_to_the_last_known_elr() -> None:
    h = cluster()
    shrink_to_leader(h)
    restart(h, 2, clean=False)
    state = h.state("t")
    assert (state.leader, state.isr, state.elr, state.last_known_elr) == (0, (0,), (1,), (2,))


def test_with_every_eligible_replica_back_uncleanly_the_last_known_leader_leads_once_unfenced() -> None:
    h = cluster()
    shrink_to_leader(h)
    h.now = SESSION + 1
    h.tick()  # every session expired: all fenced, 0 stays the ISR
    assert h.state("t").leader == NO_LEADER
    for b in (1, 2, 0):
        restart(h, b, clean=False)
    state = h.state("t")
    assert (state.leader, state.isr, state.elr, state.last_known_elr) == (NO_LEADER, (), (), (0, 1, 2))
    h.heartbeat(1)  # 1 unfenced first: the last known ELR's first member (0, the last leader) is still down
    assert h.state("t").leader == 1
    last = h.last.records[-1].partition_change  # type: ignore[union-attr]
    assert last.election == mpb.ELECTION_LAST_KNOWN and last.leader_recovery_state == mpb.RECOVERING
    state = h.state("t")
    assert (state.isr, state.elr, state.last_known_elr) == ((1,), (), ())


def test_an_elr_member_back_cleanly_leads_an_emptied_isr() -> None:
    h = cluster()
    empty_isr_by_the_leaders_crash(h)
    assert h.state("t").isr == () and h.state("t").elr == (1, 2)
    restart(h, 2, clean=True)
    assert h.state("t").leader == NO_LEADER  # registered fenced
    h.heartbeat(2)
    state = h.state("t")
    assert (state.leader, state.isr, state.elr, state.last_known_elr) == (2, (2,), (1,), (0,))


def test_the_isr_back_at_min_isr_empties_the_lists() -> None:
    h = cluster()
    shrink_to_leader(h)
    restart(h, 2, clean=False)
    h.heartbeat(2)
    assert h.alter("t", 0, [0, 1]).topics[0].partitions[0].error_code == Error.NONE
    state = h.state("t")
    assert (state.isr, state.elr, state.last_known_elr) == ((0, 1), (), ())


def test_a_new_min_isr_or_the_feature_off_empties_the_lists() -> None:
    h = cluster()
    shrink_to_leader(h)
    set_min_isr(h, 3)
    assert h.state("t").elr == ()
    shrink_again = cluster()
    shrink_to_leader(shrink_again)
    assert upgrade(shrink_again, 0).error_code == Error.NONE
    assert not elr_enabled(shrink_again.image.features) and shrink_again.state("t").elr == ()


def test_the_lists_survive_a_snapshot_and_a_bad_record_stops_the_replay() -> None:
    h = cluster()
    shrink_to_leader(h)
    restart(h, 2, clean=False)
    copy = MetadataImage.from_snapshot(h.image.snapshot())
    assert copy == h.image and copy.partition(h.topic_id("t"), 0).last_known_elr == (2,)  # type: ignore[union-attr]
    for change in (dict(eligible_leader_replicas=mpb.BrokerIdList(ids=[0])),   # the leader, in the ISR
                   dict(eligible_leader_replicas=mpb.BrokerIdList(ids=[7])),   # not a replica
                   dict(last_known_elr=mpb.BrokerIdList(ids=[1, 1])),
                   dict(isr=mpb.BrokerIdList(ids=[0, 1]))):                     # 1 would be in both
        record = mpb.MetadataRecord(partition_change=mpb.PartitionChangeRecord(
            topic_id=h.topic_id("t"), partition_id=0, **change))  # type: ignore[arg-type]
        with pytest.raises(MetadataReplayError):
            h.image.apply(record, h.image.offset + 1)


def test_with_an_empty_isr_the_eligible_stay_eligible_and_become_the_isr_when_the_feature_goes_off() -> None:
    """Emptying them there would leave nobody who may ever lead (no leader: the high watermark is still)."""
    h = cluster()
    empty_isr_by_the_leaders_crash(h)
    emptied = h.state("t")
    assert (emptied.isr, emptied.elr, emptied.last_known_elr) == ((), (1, 2), (0,))
    set_min_isr(h, 1)
    assert h.state("t") == emptied  # nothing written for it
    assert upgrade(h, 0).error_code == Error.NONE
    off = h.state("t")
    assert (off.leader, off.isr, off.elr, off.last_known_elr) == (NO_LEADER, (1, 2, 0), (), ())
    h.heartbeat(0)  # without the feature, as before it: the ISR's first live member leads
    assert h.state("t").leader == 0
