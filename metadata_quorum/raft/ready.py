"""What the core asks the shell to do, and what the shell hands back on restart.

The core never writes anything. Each call to `RaftCore.ready()` returns one
`Ready` bundle; the shell must carry out its parts IN THIS ORDER:

1. `quorum_state`: write the quorum-state file atomically and fsync it.
   A vote is granted, and a new epoch acknowledged, only by messages in
   step 6 — so they go out after the state that promises them is durable.
2. `snapshot_to_install` (a follower caught up from the leader): write the
   snapshot durably, then reset the log so it starts, empty, at the
   snapshot's end offset. The state machine loads this snapshot.
   `snapshot_to_save` (the state machine's own snapshot, handed in through
   `RaftCore.create_snapshot`): write it durably.
3. `truncate_to`: drop log entries at this offset and above, and fsync
   before going on. (Rare: only a follower that diverged truncates. Were it
   left to a later flush, a crash could bring back the dropped entries
   under a snapshot written in the meantime, and the log would no longer
   follow on from its snapshot.)
4. `entries`: append them at `entries_base_offset`. Writing is enough here;
   flushing may happen later. When an fsync that started after this
   bundle was handled completes, call `RaftCore.advance(flushed_end)`.
   The core only counts flushed entries: a follower reports only flushed
   entries in its fetch offset, a leader counts its own log end offset
   toward the high watermark only once flushed.
5. `log_start_offset`: delete log entries below it. A snapshot written in
   step 2 of this or an earlier bundle covers them.
6. `messages`: send them.
7. `committed`: apply to the state machine, in order (after loading the
   snapshot of step 2, if any). Entries with `control=True` belong to the
   quorum and take an offset but carry no state machine data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from .messages import Entry, Message, SnapshotId
from .voters import VoterSet


class QuorumStateData(NamedTuple):
    """The durable quorum-state: what this node promised in `epoch`."""

    epoch: int
    leader_id: Optional[int]
    voted_for: Optional[int]


class Snapshot(NamedTuple):
    snapshot_id: SnapshotId
    data: bytes
    # The voter set in force at the snapshot's end (KIP-853); None in a
    # static quorum, whose voters come from the configuration.
    voters: Optional[VoterSet] = None


class CommittedEntries(NamedTuple):
    base_offset: int
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Ready:
    quorum_state: Optional[QuorumStateData] = None
    snapshot_to_install: Optional[Snapshot] = None
    snapshot_to_save: Optional[Snapshot] = None
    truncate_to: Optional[int] = None
    entries_base_offset: int = 0
    entries: tuple[Entry, ...] = ()
    log_start_offset: Optional[int] = None
    messages: tuple[Message, ...] = ()
    committed: Optional[CommittedEntries] = None
    # Informational: the high watermark this node knows after this bundle.
    high_watermark: int = 0


@dataclass(slots=True)
class DurableState:
    """What survived on disk; a restarted core is built from this.

    `entries` are the flushed log entries from `log_start_offset` on; the
    log start must be the snapshot's end offset (0 without a snapshot).
    """

    quorum_state: Optional[QuorumStateData] = None
    snapshot: Optional[Snapshot] = None
    log_start_offset: int = 0
    entries: list[Entry] = field(default_factory=list)
