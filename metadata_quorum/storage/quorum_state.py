"""`quorum-state`: the epoch, leader and vote this node has promised, in Kafka's JSON.

    {"clusterId":"<id>","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,
     "currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}

-1 stands for "none". A dynamic quorum (KIP-853) writes Kafka's version 1,
without currentVoters (the voters are in the log):

    {"clusterId":"<id>","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,"data_version":1}

 It is written atomically and fsynced before the core
acts on it (ready.py, step 1). A damaged file is an error, never "no
state": starting fresh could grant a second vote in an epoch already voted in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional

from metadata_quorum.raft import QuorumStateData

from .errors import CorruptQuorumStateError, InconsistentClusterIdError, StorageError, replace_file

DATA_VERSION = 0
DYNAMIC_DATA_VERSION = 1
NONE = -1


class QuorumStateFile:
    def __init__(self, path: Path, cluster_id: str, voters: Optional[Iterable[int]]) -> None:
        """`voters`: the static voter ids; None for a dynamic quorum."""
        self.path = Path(path)
        self.cluster_id = cluster_id
        self.voters = None if voters is None else frozenset(voters)

    def read(self) -> Optional[QuorumStateData]:
        """The promised state; None if the file does not exist."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"{self.path}: unreadable: {exc.strerror}") from exc
        if not raw.strip():
            raise CorruptQuorumStateError(f"{self.path}: the file is empty")
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptQuorumStateError(f"{self.path}: not JSON ({exc})") from None
        return self._parse(doc)

    def write(self, data: QuorumStateData) -> None:
        doc = {
            "clusterId": self.cluster_id,
            "leaderId": _or_none(data.leader_id),
            "leaderEpoch": data.epoch,
            "votedId": _or_none(data.voted_for),
            "appliedOffset": 0,
        }
        if self.voters is None:
            doc["data_version"] = DYNAMIC_DATA_VERSION
        else:
            doc["currentVoters"] = [{"voterId": v} for v in sorted(self.voters)]
            doc["data_version"] = DATA_VERSION
        replace_file(self.path, json.dumps(doc, separators=(",", ":")).encode("utf-8"))

    # -- reading -------------------------------------------------------------
    def _parse(self, doc: Any) -> QuorumStateData:
        if not isinstance(doc, dict):
            raise self._corrupt(f"expected a JSON object, found {type(doc).__name__}")
        version = self._int(doc, "data_version")
        allowed = (DATA_VERSION,) if self.voters is not None else (DATA_VERSION, DYNAMIC_DATA_VERSION)
        if version not in allowed:
            raise self._corrupt(f"data_version {version} is not supported (only {' or '.join(map(str, allowed))})")
        cluster_id = doc.get("clusterId", "")
        if not isinstance(cluster_id, str):
            raise self._corrupt(f"clusterId is {cluster_id!r}, not a string")
        if cluster_id and cluster_id != self.cluster_id:  # Kafka may leave it empty
            raise InconsistentClusterIdError(
                f"{self.path}: written by cluster {cluster_id!r}, this is cluster {self.cluster_id!r}")
        file_voters = self._voters(doc) if version == DATA_VERSION else None
        if self.voters is not None and file_voters != self.voters:
            raise StorageError(f"{self.path}: written for voters {sorted(file_voters or ())}, "
                               f"but the configured voters are {sorted(self.voters)}")
        epoch = self._int(doc, "leaderEpoch")
        if epoch < 0:
            raise self._corrupt(f"leaderEpoch {epoch} is negative")
        leader_id = self._member(doc, "leaderId", file_voters)
        voted_for = self._member(doc, "votedId", file_voters)
        return QuorumStateData(epoch, leader_id, voted_for)

    def _voters(self, doc: dict) -> frozenset[int]:
        voters = doc.get("currentVoters")
        if not isinstance(voters, list):
            raise self._corrupt(f"currentVoters is {voters!r}, not a list")
        ids = [self._int(v, "voterId") if isinstance(v, dict) else None for v in voters]
        if None in ids:
            raise self._corrupt(f"currentVoters holds {voters!r}, not {{\"voterId\": n}} objects")
        return frozenset(ids)  # type: ignore[arg-type]

    def _member(self, doc: dict, key: str, voters: Optional[frozenset[int]]) -> Optional[int]:
        value = self._int(doc, key)
        if value == NONE:
            return None
        if voters is None:  # a dynamic quorum: any node may have led or been voted for
            if value < 0:
                raise self._corrupt(f"{key} {value} is not a node id")
            return value
        if value not in voters:
            raise self._corrupt(f"{key} {value} is not one of the voters {sorted(voters)}")
        return value

    def _int(self, doc: dict, key: str) -> int:
        value = doc.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._corrupt(f"{key} is {value!r}, not an integer")
        return value

    def _corrupt(self, what: str) -> CorruptQuorumStateError:
        return CorruptQuorumStateError(f"{self.path}: {what}")


def _or_none(node_id: Optional[int]) -> int:
    return NONE if node_id is None else node_id
