"""`kraftlog storage format`, as Kafka's `kafka-storage format`: prepare a
node's metadata log directory before its first start.

It writes what a first start needs into `metadata.log.dir`:

- `bootstrap.checkpoint` (metadata_quorum/storage/bootstrap_checkpoint.py):
  the bootstrap records the first active controller appends once
  (metadata_quorum/controller/bootstrap.py): a marker, then one
  UserScramCredentialRecord per --add-scram, salted and hashed here;
- `meta.properties`, as the server writes it on a first start, with its
  `directory.id` (KIP-853);
- for a dynamic quorum (KIP-853), the initial voter set, inside
  bootstrap.checkpoint as a KRAFT_VOTERS control record: `--initial-controllers
  ID@HOST:PORT:DIRECTORY_ID,...` (every first controller is formatted with the
  same list, each takes its own directory id from it) or `--standalone` (this
  controller alone, on its controller listener, with a new directory id).
  Without either a controller joins an existing quorum (`kraftlog quorum
  add-controller` makes it a voter). Static `controller.quorum.voters` take
  neither, as in Kafka.

In that order: meta.properties is what makes a directory formatted, so a
crash in between leaves one that can be formatted again. A directory
formatted already is refused (Kafka's wording), or left as it is with
--ignore-formatted; one formatted for another cluster or node is refused
either way. Nothing here sees a password after hashing it, and no message
quotes one.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from kraftlog_api import controller_pb2 as cpb
from metadata_quorum.raft.voters import Endpoint as VoterEndpoint, ReplicaKey, Voter, VoterSet, check_directory_id
from metadata_quorum.storage.meta_properties import new_directory_id
from metadata_quorum.controller.bootstrap import bootstrap_records
from metadata_quorum.controller.errors import ControllerError
from metadata_quorum.storage import InconsistentClusterIdError, MetaProperties, StorageError
from metadata_quorum.storage.bootstrap_checkpoint import write_bootstrap_checkpoint
from metadata_quorum.storage.meta_properties import FILE_NAME as META_PROPERTIES
from kafka_protocol.errors import InvalidConfigError
from security.scram_config import ScramSetting

from .server_config import BOOTSTRAP_SERVERS, CLUSTER_ID, VOTERS, ServerConfig, parse_host_port

INITIAL_CONTROLLERS = "--initial-controllers"
STANDALONE = "--standalone"


@dataclass(frozen=True)
class FormatOutcome:
    directory: Path
    formatted: bool  # False: it was formatted already (--ignore-formatted)
    credentials: int  # SCRAM credentials written into bootstrap.checkpoint
    directory_id: Optional[str] = None
    voters: Optional[VoterSet] = None  # the initial voters written (a dynamic quorum's first controllers)


def parse_initial_controllers(text: str) -> VoterSet:
    """`ID@HOST:PORT:DIRECTORY_ID,...` (kafka-storage's --initial-controllers) as a voter set;
    each voter listens on the CONTROLLER listener named later by the node that loads it."""
    voters = []
    for entry in (e.strip() for e in text.split(",")):
        node, at, rest = entry.partition("@")
        address, colon, directory = rest.rpartition(":")
        if not at or not colon or not node.isdigit():
            raise InvalidConfigError(f"{INITIAL_CONTROLLERS}: {entry!r} is not ID@HOST:PORT:DIRECTORY_ID")
        host, port = parse_host_port(INITIAL_CONTROLLERS, address)
        try:
            directory_id = check_directory_id(directory)
        except ValueError as exc:
            raise InvalidConfigError(f"{INITIAL_CONTROLLERS}: {entry!r}: {exc}") from None
        if not host or not port or directory_id is None:
            raise InvalidConfigError(f"{INITIAL_CONTROLLERS}: {entry!r} needs a host, a port and a directory id")
        voters.append(Voter(ReplicaKey(int(node), directory_id), (VoterEndpoint("CONTROLLER", host, port),)))
    try:
        return VoterSet(voters)
    except ValueError as exc:
        raise InvalidConfigError(f"{INITIAL_CONTROLLERS}: {exc}") from None


def _initial_voters(config: ServerConfig, initial_controllers: Optional[str],
                    standalone: bool) -> tuple[Optional[VoterSet], Optional[str]]:
    """(the initial voters to write, this node's directory id) for a dynamic quorum's format."""
    if initial_controllers is None and not standalone:
        return None, None
    given = INITIAL_CONTROLLERS if initial_controllers is not None else STANDALONE
    if initial_controllers is not None and standalone:
        raise InvalidConfigError(f"{INITIAL_CONTROLLERS} and {STANDALONE}: give one, not both")
    if not config.dynamic_quorum:
        raise InvalidConfigError(f"{given}: the config has static {VOTERS}; a dynamic quorum is found "
                                 f"through {BOOTSTRAP_SERVERS} instead")
    if not config.is_controller:
        raise InvalidConfigError(f"{given}: only a controller is formatted with the initial voters")
    name = config.controller_endpoint().name
    if standalone:
        endpoint = config.controller_endpoint()
        directory_id = new_directory_id()
        me = Voter(ReplicaKey(config.node_id, directory_id), (VoterEndpoint(name, endpoint.host, endpoint.port),))
        return VoterSet([me]), directory_id
    parsed = parse_initial_controllers(initial_controllers or "")
    # The listener name is the controllers' own (controller.listener.names), as Kafka's tool takes it.
    voters = VoterSet(Voter(v.key, tuple(e._replace(name=name) for e in v.endpoints)) for v in parsed)
    mine = voters.key_of(config.node_id)
    return voters, None if mine is None else mine.directory_id


def format_storage(config: ServerConfig, scram: Sequence[ScramSetting] = (), *, cluster_id: Optional[str] = None,
                   ignore_formatted: bool = False, initial_controllers: Optional[str] = None,
                   standalone: bool = False) -> FormatOutcome:
    if cluster_id is not None and cluster_id != config.cluster_id:
        raise InvalidConfigError(f"--cluster-id {cluster_id!r} is not the config's {CLUSTER_ID} "
                                 f"{config.cluster_id!r}: the node would refuse its own directory")
    voters, directory_id = _initial_voters(config, initial_controllers, standalone)
    directory = Path(config.metadata_log_dir)
    # Hash first: a bad credential must leave the directory untouched.
    try:
        records = bootstrap_records(_upsertion(setting) for setting in scram)
    except ControllerError as exc:
        raise InvalidConfigError(f"--add-scram: {exc.message}") from None
    if _formatted(directory, config, ignore_formatted):
        return FormatOutcome(directory, False, 0)
    write_bootstrap_checkpoint(directory, records, voters)
    meta = MetaProperties.ensure(directory, config.cluster_id, config.node_id, directory_id)
    return FormatOutcome(directory, True, len(records) - 1, meta.directory_id, voters)


def _upsertion(setting: ScramSetting) -> cpb.AlterUserScramCredentialsRequest.Upsertion:
    if not setting.name:
        raise InvalidConfigError(f"{setting.mechanism.mechanism_name}: a name=... is required")
    salt, salted = setting.salted()
    return cpb.AlterUserScramCredentialsRequest.Upsertion(
        name=setting.name, mechanism=setting.mechanism, iterations=setting.iterations, salt=salt,
        salted_password=salted)


def _formatted(directory: Path, config: ServerConfig, ignore_formatted: bool) -> bool:
    """Whether the directory is formatted for this node already; refuses one of another cluster or node."""
    found = MetaProperties.read(directory)
    if found is None:
        return False
    path = directory / META_PROPERTIES
    if found.cluster_id != config.cluster_id:
        raise InconsistentClusterIdError(
            f"Invalid cluster.id in: {path}. Expected {config.cluster_id}, but read {found.cluster_id}")
    if found.node_id != config.node_id:
        raise StorageError(
            f"Stored node id {found.node_id} doesn't match previous node id {config.node_id} in {path}. "
            "If you moved your data, make sure your configured node id matches. If you intend to create "
            "a new node, you should remove all data in your data directories.")
    if not ignore_formatted:
        raise StorageError(f"Log directory {directory} is already formatted. Use --ignore-formatted to "
                           "ignore this directory and format the others.")
    return True
