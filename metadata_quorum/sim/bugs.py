"""Deliberate bugs, injected through the simulator's test-only start hook.

Each one breaks a rule the protocol depends on; the simulator must catch
every one of them (tests/metadata_quorum/test_simulator.py proves it does).
None of this is used outside tests and `--inject-bug`.
"""

from __future__ import annotations

from typing import Callable

from .cluster import SimNode


def ack_before_flush(node: SimNode) -> None:
    """The core is told entries are flushed as soon as it hands them out."""
    core = node.core
    assert core is not None
    original = core.ready

    def ready():  # type: ignore[no-untyped-def]
        bundle = original()
        if bundle is not None and bundle.entries:
            core.advance(core.log.end_offset)
        return bundle

    core.ready = ready  # type: ignore[method-assign]


def majority_of_one(node: SimNode) -> None:
    """Node 1 believes one vote, and one copy, is a majority."""
    if node.node_id == 1 and node.core is not None:
        node.core.majority = 1


def vote_ignores_log(node: SimNode) -> None:
    """Voters grant votes without checking that the candidate's log is up to date."""
    core = node.core
    assert core is not None
    core.candidate_log_ok = lambda last_epoch, end_offset: True  # type: ignore[method-assign]


def majority_too_large(node: SimNode) -> None:
    """Every node wants one vote more than there are voters: safe, but nobody is ever elected."""
    if node.core is not None:
        node.core.majority = len(node.core.voters) + 1


BUGS: dict[str, Callable[[SimNode], None]] = {
    "ack-before-flush": ack_before_flush,
    "majority-of-one": majority_of_one,
    "vote-ignores-log": vote_ignores_log,
    "majority-too-large": majority_too_large,
}
