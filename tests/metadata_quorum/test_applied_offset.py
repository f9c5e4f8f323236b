"""How far a node has applied the metadata log counts its control entries:
a new leader's LeaderChange entry (and a voter set) commits like any record
but holds no metadata, so the image's own offset stops before it. A broker
that reported only the image's offset would look behind the high watermark
for good after a controller election with no metadata written since (the
adversarial suite waited on exactly that and timed out)."""
from __future__ import annotations

import asyncio

from metadata_quorum.metadata_state import MetadataStateMachine

from .test_controller_pipeline import create, one_controller


def test_the_applied_offset_is_the_quorum_nodes_applied_end(tmp_path) -> None:
    async def scenario(node, metadata: MetadataStateMachine, active) -> None:
        # The one-voter leader's LeaderChange entry committed at the start, then
        # the broker's registration and heartbeat: records follow it.
        assert metadata.applied_offset == node.applied_end - 1 == metadata.image.offset
        created = await active.handle("CreateTopics", create("after-control"))
        assert created.topics[0].error_code == 0, created
        assert metadata.applied_offset == node.applied_end - 1 == metadata.image.offset

    asyncio.run(one_controller(tmp_path, scenario))


def test_the_applied_offset_passes_control_entries_the_image_does_not_hold() -> None:
    machine = MetadataStateMachine()
    machine.committed_through(4)  # entries 0-4 committed, none of them a metadata record
    assert machine.image.offset == -1 and machine.applied_offset == 4
    machine.committed_through(2)  # never goes back
    assert machine.applied_offset == 4
