"""Deliberate controller bugs, planted through the simulator's test-only hook.

Each one breaks a rule the metadata depends on; the simulator must catch
every one (tests/metadata_quorum/test_controller_sim.py proves it does).
None of this is used outside tests and `--inject-bug`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from kraftlog_api import controller_pb2 as cpb
from metadata_quorum.controller import Controller, ControllerResult


def isr_ignores_epochs(controller: Controller) -> None:
    """AlterPartition is judged as if the leader had the current epochs."""
    original = controller.handle_alter_partition

    def handle(request: cpb.AlterPartitionRequest) -> ControllerResult:
        forged = cpb.AlterPartitionRequest()
        forged.CopyFrom(request)
        for topic in forged.topics:
            for p in topic.partitions:
                state = controller.image.partition(topic.topic_id, p.partition_index)
                if state is not None:
                    p.leader_epoch, p.partition_epoch = state.leader_epoch, state.partition_epoch
        return original(forged)

    controller.handle_alter_partition = handle  # type: ignore[method-assign]


def fencing_keeps_leaders(controller: Controller) -> None:
    """Session expiry fences brokers but leaves their partitions alone."""
    original = controller.tick

    def tick(now_ms: int) -> ControllerResult:
        result = original(now_ms)
        if any(r.WhichOneof("record") == "broker_registration_change" for r in result.records):
            result.records = [r for r in result.records if r.WhichOneof("record") != "partition_change"]
        return result

    controller.tick = tick  # type: ignore[method-assign]


def always_unclean(controller: Controller) -> None:
    """The controller's static unclean.leader.election.enable is true whatever the config says."""
    controller.config = dataclasses.replace(controller.config, unclean_leader_election_enable=True)


def reassignment_skips_catch_up(controller: Controller) -> None:
    """A reassignment switches to its target at once, before the new replicas have caught up."""
    original = controller.handle_alter_partition_reassignments

    def handle(request: cpb.AlterPartitionReassignmentsRequest) -> ControllerResult:
        result = original(request)
        for record in result.records:
            change = record.partition_change
            if change.adding_replicas.ids:
                target = [b for b in change.replicas.ids if b not in change.removing_replicas.ids]
                change.replicas.ids[:] = target
                change.adding_replicas.ids[:] = []
                change.removing_replicas.ids[:] = []
        return result

    controller.handle_alter_partition_reassignments = handle  # type: ignore[method-assign]


def unclean_shutdown_ignored(controller: Controller) -> None:
    """Every new incarnation is taken for a clean shutdown (KIP-966's previous_broker_epoch is not read)."""
    original = controller.handle_registration

    def handle(request: cpb.BrokerRegistrationRequest, now_ms: int) -> ControllerResult:
        existing = controller.image.brokers.get(request.broker_id)
        if existing is not None:
            request.previous_broker_epoch = existing.broker_epoch
        return original(request, now_ms)

    controller.handle_registration = handle  # type: ignore[method-assign]


BUGS: dict[str, Callable[[Controller], None]] = {
    "isr-ignores-epochs": isr_ignores_epochs,
    "fencing-keeps-leaders": fencing_keeps_leaders,
    "always-unclean": always_unclean,
    "reassignment-skips-catch-up": reassignment_skips_catch_up,
    "unclean-shutdown-ignored": unclean_shutdown_ignored,
}
