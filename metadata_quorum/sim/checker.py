"""Safety invariants, checked incrementally after every simulator step.

- at most one leader per epoch;
- no node's epoch ever decreases (its durable epoch, across crashes too);
- quorum-state is durable before anything relies on it (disk == core);
- a leader's high watermark never decreases;
- when a leader's high watermark moves, a majority of voters holds the
  entry below it durably (log matching covers the entries before);
- log matching: two logs with an entry of the same offset and epoch are
  identical up to it (checked with a hash chain over every log);
- leader completeness: a leader of epoch e holds every entry committed by
  a leader of an earlier epoch (a leader of an old epoch, slow to learn it
  won, may lack entries that later epochs committed);
- committed entries never change: every node applies the same entry at
  each offset, never truncates below what it applied, and a snapshot it
  loads equals the state machine at that offset;
- a snapshot begins where the log starts (core and disk);
- voter changes (KIP-853): a leader's high watermark is held by a majority
  of the voter set it has in force (replicas by id and directory: a
  reformatted node holds nothing); a leader's log holds at most one
  uncommitted VotersRecord; a snapshot carries the voter set in force at its
  end; every node's voter set is the one its log says.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Optional

from metadata_quorum.raft import Entry, Ready
from metadata_quorum.raft.leader import Leader
from metadata_quorum.raft.voters import VoterSet, voters_of_entry

from .statemachine import ChecksumStateMachine

if TYPE_CHECKING:
    from .cluster import SimNode


class InvariantViolation(Exception):
    pass


class InvariantChecker:
    def __init__(self, voters: VoterSet, nodes: dict[int, "SimNode"]) -> None:
        self.voters = voters  # the bootstrap voter set
        self.nodes = nodes
        self.committed: list[Entry] = []
        # The epoch of the leader whose high watermark first covered each offset.
        self.commit_epochs: list[int] = []
        self.committed_hash: list[int] = [0]  # hash of the committed prefix [0, end)
        self.sm_states: list[tuple[int, int]] = [(0, 0)]  # state machine (count, crc) at each end
        self.seen: dict[tuple[int, int], int] = {}  # (offset, epoch) -> chain hash through it
        self.leaders: dict[int, int] = {}  # epoch -> leader id
        self.max_epoch: dict[int, int] = {}
        self.leader_hw: dict[int, tuple[int, int]] = {}  # node -> (epoch, hw)
        # Per node: chain hash at the log start and after each written entry.
        self.base_hash: dict[int, int] = {}
        self.hashes: dict[int, list[int]] = {}

    def fail(self, message: str) -> None:
        raise InvariantViolation(message)

    # --- log matching ---------------------------------------------------------

    def _extend(self, node_id: int, start: int, entries: list[Entry] | tuple[Entry, ...], first: int) -> None:
        """Hash `entries` (at offsets first, first+1, ...) onto node_id's chain."""
        hashes = self.hashes[node_id]
        prev = hashes[-1] if hashes else self.base_hash[node_id]
        seen = self.seen
        offset = first
        for entry in entries:
            h = hash((prev, entry.epoch, entry.data, entry.control))
            key = (offset, entry.epoch)
            other = seen.setdefault(key, h)
            if other != h:
                self.fail(
                    f"log matching: node {node_id} has an entry at offset {offset} epoch {entry.epoch} "
                    "whose log differs from another node's log with the same entry"
                )
            hashes.append(h)
            prev = h
            offset += 1

    def _prefix_hash(self, end: int, what: str) -> int:
        if end >= len(self.committed_hash):
            self.fail(f"{what}: starts at {end}, beyond anything ever committed ({len(self.committed)})")
        return self.committed_hash[end]

    def node_reformatted(self, nid: int) -> None:
        """A wiped disk and a new directory id: a new replica, whose epoch starts over."""
        self.max_epoch.pop(nid, None)
        self.leader_hw.pop(nid, None)

    def node_started(self, node: "SimNode") -> None:
        """A node (re)started from its disk: rebuild its hash chain."""
        disk = node.disk
        self.base_hash[node.node_id] = self._prefix_hash(disk.written_start, f"node {node.node_id} log")
        self.hashes[node.node_id] = []
        self._extend(node.node_id, disk.written_start, disk.written, disk.written_start)
        if node.sm.applied_end != disk.snapshot_end:
            self.fail(f"node {node.node_id}: state machine restarted at {node.sm.applied_end}, snapshot ends {disk.snapshot_end}")
        self._check_sm_state(node, "restart")

    # --- per bundle -------------------------------------------------------------

    def on_ready(self, node: "SimNode", ready: Ready, applied_before: int) -> None:
        """Called after the node carried out `ready` (disk, state machine)."""
        nid = node.node_id
        disk = node.disk
        hashes = self.hashes[nid]
        if ready.snapshot_to_install is not None:
            end = ready.snapshot_to_install.snapshot_id.end_offset
            self.base_hash[nid] = self._prefix_hash(end, f"node {nid} installed snapshot")
            hashes.clear()
            self._check_sm_state(node, "snapshot install", end)
            applied_before = end
        if ready.truncate_to is not None:
            if ready.truncate_to < applied_before:
                self.fail(f"node {nid} truncated to {ready.truncate_to} below applied {applied_before}")
            start = disk.written_start
            del hashes[ready.truncate_to - start :]
        if ready.entries:
            self._extend(nid, disk.written_start, ready.entries, ready.entries_base_offset)
        if ready.log_start_offset is not None:
            # The disk already starts at the new offset; the chain value just
            # below it must be the committed prefix's.
            start = ready.log_start_offset
            expected = self._prefix_hash(start, f"node {nid} snapshot")
            cut = len(hashes) - (disk.written_end - start)
            if cut > 0 and hashes[cut - 1] != expected:
                self.fail(f"node {nid}: snapshot at {start} does not match the committed log")
            del hashes[: max(cut, 0)]
            self.base_hash[nid] = expected
        if ready.committed is not None:
            self._check_committed(node, ready.committed.base_offset, ready.committed.entries)
        saved = ready.snapshot_to_save or ready.snapshot_to_install
        if saved is not None and saved.voters is not None:
            end = saved.snapshot_id.end_offset
            if saved.voters != self._voters_at(end):
                self.fail(f"node {nid}: snapshot at {end} carries voters {saved.voters}, "
                          f"the committed log says {self._voters_at(end)}")

    def _check_committed(self, node: "SimNode", base: int, entries: tuple[Entry, ...]) -> None:
        committed = self.committed
        offset = base
        for entry in entries:
            if offset < len(committed):
                if committed[offset] != entry:
                    self.fail(
                        f"committed entry changed: node {node.node_id} applied {entry} at {offset}, "
                        f"another node applied {committed[offset]}"
                    )
            elif offset == len(committed):
                committed.append(entry)
                prev = self.committed_hash[-1]
                self.committed_hash.append(hash((prev, entry.epoch, entry.data, entry.control)))
                count, crc = self.sm_states[-1]
                if not entry.control:
                    count, crc = ChecksumStateMachine.step(count, crc, entry.data)
                self.sm_states.append((count, crc))
            else:
                self.fail(f"node {node.node_id} applied offset {offset} past the committed end {len(committed)}")
            offset += 1
        if entries and self.hashes[node.node_id]:
            # What the node applied is what its own log holds.
            disk = node.disk
            i = base + len(entries) - 1 - disk.written_start
            if 0 <= i < len(self.hashes[node.node_id]) and self.hashes[node.node_id][i] != self.committed_hash[base + len(entries)]:
                self.fail(f"node {node.node_id} applied entries that are not its log's")

    def _check_sm_state(self, node: "SimNode", what: str, end: Optional[int] = None) -> None:
        sm = node.sm
        end = sm.applied_end if end is None else end
        if end >= len(self.sm_states):
            self.fail(f"node {node.node_id} {what}: state at {end} beyond the committed end")
        if (sm.count, sm.checksum) != self.sm_states[end]:
            self.fail(f"node {node.node_id} {what}: state machine at {end} differs from the committed log")

    # --- per step -----------------------------------------------------------------

    def after_step(self, node: "SimNode") -> None:
        core = node.core
        assert core is not None
        nid = node.node_id
        epoch = core.epoch()
        disk = node.disk
        # Everything the core has promised is on disk.
        if core.quorum_state() != disk.quorum_state:
            self.fail(f"node {nid}: quorum-state {core.quorum_state()} not persisted (disk {disk.quorum_state})")
        if epoch < self.max_epoch.get(nid, 0):
            self.fail(f"node {nid}: epoch went back from {self.max_epoch[nid]} to {epoch}")
        self.max_epoch[nid] = epoch
        # The log and snapshot agree, in memory and on disk.
        log = core.log
        snap_end = core.snapshot.snapshot_id.end_offset if core.snapshot else 0
        if log.start_offset != snap_end or disk.written_start != disk.snapshot_end or disk.snapshot_end != snap_end:
            self.fail(
                f"node {nid}: snapshot ends at {snap_end} (disk {disk.snapshot_end}) "
                f"but the log starts at {log.start_offset} (disk {disk.written_start})"
            )
        if log.end_offset != disk.written_end:
            self.fail(f"node {nid}: core log ends at {log.end_offset}, disk at {disk.written_end}")
        state = core.state
        if isinstance(state, Leader):
            other = self.leaders.setdefault(epoch, nid)
            if other != nid:
                self.fail(f"two leaders in epoch {epoch}: {other} and {nid}")
            hw = state.high_watermark
            last_epoch, last_hw = self.leader_hw.get(nid, (-1, -1))
            if last_epoch != epoch:
                self._check_leader_completeness(node)
                last_hw = -1
            self._check_one_voter_change(node)
            if hw is not None:
                if hw < last_hw:
                    self.fail(f"leader {nid} high watermark went back from {last_hw} to {hw}")
                if hw > last_hw:
                    self._check_majority_holds(hw, core.voter_set)
                    if hw > len(self.commit_epochs):
                        self.commit_epochs.extend([epoch] * (hw - len(self.commit_epochs)))
                self.leader_hw[nid] = (epoch, hw)
            else:
                self.leader_hw[nid] = (epoch, last_hw)

    def _check_leader_completeness(self, node: "SimNode") -> None:
        core = node.core
        assert core is not None
        log = core.log
        committed = self.committed
        # Entries committed in earlier epochs: a prefix, as commit epochs only grow.
        must_hold = bisect_left(self.commit_epochs, core.epoch())
        if log.end_offset < must_hold:
            self.fail(
                f"leader {node.node_id} of epoch {core.epoch()} lacks committed entries "
                f"(log ends {log.end_offset}, {must_hold} committed before this epoch)"
            )
        for offset in range(log.start_offset, must_hold):
            if log.entry(offset) != committed[offset]:
                self.fail(f"leader {node.node_id} of epoch {core.epoch()} has a different entry at committed offset {offset}")

    def _check_majority_holds(self, hw: int, voters: VoterSet) -> None:
        nodes = self.nodes
        target = hw - 1
        if target >= len(self.committed):
            self.fail(f"high watermark {hw} beyond the committed entries applied ({len(self.committed)})")
        entry = self.committed[target]
        holders = 0
        for voter in voters:
            node = nodes.get(voter.key.id)
            if node is None or not voter.key.matches(node.key):
                continue  # that replica's disk is gone (reformatted): it holds nothing
            disk = node.disk
            if disk.snapshot_end > target or disk.durable_entry(target) == entry:
                holders += 1
        if holders < voters.majority():
            self.fail(f"entry {target} is below the high watermark but only {holders} voters of {voters} hold it durably")

    def _check_one_voter_change(self, node: "SimNode") -> None:
        core = node.core
        assert core is not None
        uncommitted = [o for o in core.voter_record_offsets() if o >= len(self.committed)]
        if len(uncommitted) > 1:
            self.fail(f"leader {node.node_id} has {len(uncommitted)} uncommitted voter changes, at {uncommitted}")

    def committed_voters(self) -> VoterSet:
        """The voter set of the latest committed VotersRecord (the bootstrap set if none)."""
        return self._voters_at(len(self.committed))

    def final_check(self) -> None:
        """Every committed entry is held durably by a majority of the voters
        in force, and every node's voter set is the one the log says."""
        if self.committed:
            self._check_majority_holds(len(self.committed), self.committed_voters())
        for node in self.nodes.values():
            core = node.core
            if core is None:
                continue
            log = core.log
            expected = core.snapshot.voters if core.snapshot is not None else None
            for entry in log.entries_between(log.start_offset, log.end_offset):
                if entry.control:
                    expected = voters_of_entry(entry.data) or expected
            if expected is not None and core.voter_set != expected:
                self.fail(f"node {node.node_id}: voter set {core.voter_set}, but its log says {expected}")

    def _voters_at(self, end: int) -> VoterSet:
        """The voter set of the latest committed VotersRecord below `end`."""
        for entry in reversed(self.committed[:end]):
            if entry.control:
                voters = voters_of_entry(entry.data)
                if voters is not None:
                    return voters
        return self.voters
