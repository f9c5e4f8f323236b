"""The voter set of a dynamic quorum (KIP-853): replica keys, endpoints, and the VotersRecord.

A replica is identified by its node id and the directory id of its metadata
log directory (a UUID made when the directory is formatted), so a node whose
disk was wiped and reformatted is a different replica than the voter it was:
it cannot vote with a log it no longer has. A directory id of None is
"unknown" (Kafka's zero UUID): a static `controller.quorum.voters` names ids
only, and such a key matches any directory of that id.

The voter set lives in the log as control entries (the latest one, committed
or not, is in force) and in snapshots. Its bytes are Kafka's VotersRecord
value, version 0:

    Version int16, Voters compact array of
        { VoterId int32, VoterDirectoryId uuid, Endpoints compact array of
              { Name compact string, Host compact string, Port uint16, tags },
          KRaftVersionFeature { MinSupportedVersion int16, MaxSupportedVersion int16, tags },
          tags },
    tags

In the core's log the entry's data is that value behind VOTERS_TAG, which
tells it from the leader-change record (the storage layer writes the value
alone under Kafka's KRAFT_VOTERS control key and puts the tag back on read).
"""

from __future__ import annotations

import base64
import struct
from typing import Iterable, Iterator, Mapping, NamedTuple, Optional

from kafka_protocol.schema_types import Reader, SchemaError, Writer

VOTERS_TAG = b"KRaftVoters:"
VOTERS_RECORD_VERSION = 0
ZERO_UUID = bytes(16)
# kraft.version 1 is the one with VotersRecord (KIP-853); every voter here supports 0..1.
KRAFT_VERSION_RANGE = (0, 1)
_PORT = struct.Struct(">H")


class ReplicaKey(NamedTuple):
    id: int
    directory_id: Optional[str] = None  # base64url UUID; None: unknown (matches any)

    def matches(self, other: "ReplicaKey") -> bool:
        """Same replica as far as both keys know: same id, and the same directory when both name one."""
        if self.id != other.id:
            return False
        return self.directory_id is None or other.directory_id is None or self.directory_id == other.directory_id

    def __str__(self) -> str:
        return f"{self.id}" if self.directory_id is None else f"{self.id}@{self.directory_id}"


class Endpoint(NamedTuple):
    name: str  # the listener name (CONTROLLER)
    host: str
    port: int


class Voter(NamedTuple):
    key: ReplicaKey
    endpoints: tuple[Endpoint, ...] = ()


# --- directory ids ------------------------------------------------------------------


def uuid_text(raw: bytes) -> Optional[str]:
    """Kafka's text form of a UUID (base64url, no padding); None for the zero UUID."""
    if len(raw) != 16:
        raise ValueError(f"a uuid is 16 bytes, not {len(raw)}")
    if raw == ZERO_UUID:
        return None
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def uuid_bytes(text: Optional[str]) -> bytes:
    """The 16 bytes of a base64url UUID (None: the zero UUID); ValueError if it is not one."""
    if text is None:
        return ZERO_UUID
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"{text!r} is not a base64url UUID (22 characters)")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not a base64url UUID") from None
    if len(raw) != 16 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != text:
        raise ValueError(f"{text!r} is not a base64url UUID")
    return raw


def check_directory_id(text: Optional[str]) -> Optional[str]:
    """`text` if it is a non-zero base64url UUID or None; ValueError otherwise."""
    if text is not None and uuid_bytes(text) == ZERO_UUID:
        raise ValueError("the zero UUID is not a directory id")
    return text


# --- the voter set --------------------------------------------------------------------


class VoterSet:
    """An immutable set of voters by node id (one replica key per id)."""

    __slots__ = ("_voters",)

    def __init__(self, voters: Iterable[Voter] = ()) -> None:
        by_id: dict[int, Voter] = {}
        for voter in voters:
            if voter.key.id < 0:
                raise ValueError(f"voter id {voter.key.id} is negative")
            if voter.key.id in by_id:
                raise ValueError(f"voter {voter.key.id} appears twice")
            by_id[voter.key.id] = voter
        self._voters: Mapping[int, Voter] = dict(sorted(by_id.items()))

    @classmethod
    def of_ids(cls, ids: Iterable[int]) -> "VoterSet":
        """A static voter set: ids only, directories unknown."""
        return cls(Voter(ReplicaKey(i)) for i in ids)

    def __iter__(self) -> Iterator[Voter]:
        return iter(self._voters.values())

    def __len__(self) -> int:
        return len(self._voters)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VoterSet) and dict(self._voters) == dict(other._voters)

    def __hash__(self) -> int:
        return hash(tuple(self._voters.values()))

    def __repr__(self) -> str:
        return "VoterSet(" + ",".join(str(v.key) for v in self) + ")"

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(self._voters)

    def get(self, node_id: int) -> Optional[Voter]:
        return self._voters.get(node_id)

    def key_of(self, node_id: int) -> Optional[ReplicaKey]:
        voter = self._voters.get(node_id)
        return None if voter is None else voter.key

    def has_key(self, key: ReplicaKey) -> bool:
        """Whether `key` is a voter here (see ReplicaKey.matches)."""
        voter = self._voters.get(key.id)
        return voter is not None and voter.key.matches(key)

    def majority(self) -> int:
        return len(self._voters) // 2 + 1

    def added(self, voter: Voter) -> "VoterSet":
        assert voter.key.id not in self._voters
        return VoterSet([*self, voter])

    def removed(self, node_id: int) -> "VoterSet":
        return VoterSet(v for v in self if v.key.id != node_id)

    def updated(self, voter: Voter) -> "VoterSet":
        return VoterSet(voter if v.key.id == voter.key.id else v for v in self)

    def endpoint(self, node_id: int, listener: Optional[str] = None) -> Optional[Endpoint]:
        """Where voter `node_id` listens (on `listener`, else its first endpoint)."""
        voter = self._voters.get(node_id)
        if voter is None:
            return None
        for ep in voter.endpoints:
            if listener is None or ep.name == listener:
                return ep
        return None

    # --- Kafka's VotersRecord value --------------------------------------------------

    def encode(self) -> bytes:
        w = Writer().int16(VOTERS_RECORD_VERSION)
        w.compact_array(list(self), _write_voter)
        return w.no_tagged_fields().bytes()

    @classmethod
    def decode(cls, data: bytes) -> "VoterSet":
        """A VotersRecord value; ValueError if it is not one."""
        try:
            r = Reader(data)
            version = r.int16()
            if version != VOTERS_RECORD_VERSION:
                raise ValueError(f"VotersRecord version {version} is not supported")
            voters = r.compact_array(_read_voter)
            r.skip_tagged_fields()
            if r.pos != len(r.data):
                raise ValueError(f"{len(r.data) - r.pos} bytes after the VotersRecord")
            return cls(voters)
        except SchemaError as exc:
            raise ValueError(f"not a VotersRecord: {exc}") from None


def _write_endpoint(w: Writer, ep: Endpoint) -> None:
    w.compact_string(ep.name).compact_string(ep.host).raw(_PORT.pack(ep.port)).no_tagged_fields()


def _write_voter(w: Writer, voter: Voter) -> None:
    w.int32(voter.key.id).uuid(uuid_bytes(voter.key.directory_id))
    w.compact_array(list(voter.endpoints), _write_endpoint)
    lo, hi = KRAFT_VERSION_RANGE
    w.int16(lo).int16(hi).no_tagged_fields()
    w.no_tagged_fields()


def _read_endpoint(r: Reader) -> Endpoint:
    name, host = r.compact_string(), r.compact_string()
    port = r.int16() & 0xFFFF
    r.skip_tagged_fields()
    if name is None or host is None:
        raise SchemaError("an endpoint without a name or host")
    return Endpoint(name, host, port)


def _read_voter(r: Reader) -> Voter:
    node_id = r.int32()
    directory = uuid_text(r.uuid())
    endpoints = tuple(r.compact_array(_read_endpoint))
    r.int16(), r.int16()
    r.skip_tagged_fields()
    r.skip_tagged_fields()
    return Voter(ReplicaKey(node_id, directory), endpoints)


# --- as a control entry -----------------------------------------------------------------


def voters_entry_data(voters: VoterSet) -> bytes:
    return VOTERS_TAG + voters.encode()


def voters_of_entry(data: bytes) -> Optional[VoterSet]:
    """The voter set a control entry's data holds; None if it is another control entry."""
    if not data.startswith(VOTERS_TAG):
        return None
    return VoterSet.decode(data[len(VOTERS_TAG):])


# --- in a snapshot sent over FetchSnapshot ---------------------------------------------
# A snapshot's voters travel in front of its data: SNAPSHOT_VOTERS_TAG, the
# VotersRecord value's length (uint32) and the value. A snapshot without
# voters (a static quorum) travels as its bare data, as before KIP-853.
SNAPSHOT_VOTERS_TAG = b"\x00KRaftSnapshotVoters\x00"
_LENGTH = struct.Struct(">I")


def snapshot_payload(data: bytes, voters: Optional[VoterSet]) -> bytes:
    if voters is None:
        return data
    value = voters.encode()
    return SNAPSHOT_VOTERS_TAG + _LENGTH.pack(len(value)) + value + data


def split_snapshot_payload(payload: bytes) -> tuple[bytes, Optional[VoterSet]]:
    """(data, voters) of a payload; ValueError if its voters part is damaged."""
    if not payload.startswith(SNAPSHOT_VOTERS_TAG):
        return payload, None
    at = len(SNAPSHOT_VOTERS_TAG)
    if len(payload) < at + _LENGTH.size:
        raise ValueError("snapshot voters cut short")
    (n,) = _LENGTH.unpack_from(payload, at)
    at += _LENGTH.size
    if len(payload) < at + n:
        raise ValueError("snapshot voters cut short")
    return payload[at + n:], VoterSet.decode(payload[at:at + n])
