"""Every RPC of every service, with hostile values, against a real cluster
(three controllers, three brokers) and a records-only quorum.

The cases are data (cases.py); one checker (harness.check) sends each and
asserts Kafka's error code, that nothing the reference snapshot holds
changed, and that the node still serves. After each RPC's table every node
is probed; the last test reads back every record produced at the start,
byte for byte.
"""
from __future__ import annotations

from typing import Union

import pytest

from .cases import CASES
from .harness import Case, check
from .world import World


class Probe:
    """After an RPC's cases: every node still serving."""

    def __init__(self, rpc: str) -> None:
        self.rpc = rpc


def _plan() -> list:
    params: list = []
    order: dict[str, list[Case]] = {}
    for case in CASES:
        order.setdefault(case.rpc, []).append(case)
    for rpc, cases in order.items():
        for case in cases:
            marks = [pytest.mark.xfail(strict=False, reason=case.xfail, run=not case.harms)] if case.xfail else []
            params.append(pytest.param(case, id=f"{rpc}:{case.name}", marks=marks))
        params.append(pytest.param(Probe(rpc), id=f"{rpc}:probe-every-node"))
    return params


@pytest.fixture(scope="module", autouse=True)
def reference(world: World) -> None:
    """The state the cases must leave alone, as this module finds it (the
    fuzzer, run first, may have created topics and groups of its own)."""
    world.retake_reference()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("item", _plan())
def test_hostile_request(world: World, item: Union[Case, Probe]) -> None:
    if isinstance(item, Probe):
        world.probe()
    else:
        try:
            check(world, item)
        except AssertionError:
            # A failed case may have left a side effect: compare the next case
            # against what is there now, so one finding does not fail them all.
            world.retake_reference()
            raise


def test_records_produced_first_read_back_byte_for_byte(world: World) -> None:
    world.probe()
    for (topic, partition), first in world.data_bytes.items():
        now = world.read_all(topic, partition)
        # Cases that were allowed to append did so after these bytes.
        assert now[:len(first)] == first, (topic, partition)


def test_no_handler_failed(world: World) -> None:
    """No node logged a traceback: every hostile request was answered by a handler that did not raise."""
    for node in (*world.cluster.controllers, *world.cluster.brokers):
        assert "Traceback" not in world.cluster.log_text(node), f"a handler failed on node {node}"
