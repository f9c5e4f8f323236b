"""`kraftlog storage format`, as Kafka's `kafka-storage format`: prepare a
node's metadata log directory before its first start.

It writes what a first start needs into `metadata.log.dir`:

- `bootstrap.checkpoint` (metadata_quorum/storage/bootstrap_checkpoint.py):
  the bootstrap records the first active controller appends once
  (metadata_quorum/controller/bootstrap.py): a marker, then one
  UserScramCredentialRecord per --add-scram, salted and hashed here;
- `meta.properties`, as the server writes it on a first start.

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
from metadata_quorum.controller.bootstrap import bootstrap_records
from metadata_quorum.controller.errors import ControllerError
from metadata_quorum.storage import InconsistentClusterIdError, MetaProperties, StorageError
from metadata_quorum.storage.bootstrap_checkpoint import write_bootstrap_checkpoint
from metadata_quorum.storage.meta_properties import FILE_NAME as META_PROPERTIES
from kafka_protocol.errors import InvalidConfigError
from security.scram_config import ScramSetting

from .server_config import CLUSTER_ID, ServerConfig


@dataclass(frozen=True)
class FormatOutcome:
    directory: Path
    formatted: bool  # False: it was formatted already (--ignore-formatted)
    credentials: int  # SCRAM credentials written into bootstrap.checkpoint


def format_storage(config: ServerConfig, scram: Sequence[ScramSetting] = (), *, cluster_id: Optional[str] = None,
                   ignore_formatted: bool = False) -> FormatOutcome:
    if cluster_id is not None and cluster_id != config.cluster_id:
        raise InvalidConfigError(f"--cluster-id {cluster_id!r} is not the config's {CLUSTER_ID} "
                                 f"{config.cluster_id!r}: the node would refuse its own directory")
    directory = Path(config.metadata_log_dir)
    # Hash first: a bad credential must leave the directory untouched.
    try:
        records = bootstrap_records(_upsertion(setting) for setting in scram)
    except ControllerError as exc:
        raise InvalidConfigError(f"--add-scram: {exc.message}") from None
    if _formatted(directory, config, ignore_formatted):
        return FormatOutcome(directory, False, 0)
    write_bootstrap_checkpoint(directory, records)
    MetaProperties.ensure(directory, config.cluster_id, config.node_id)
    return FormatOutcome(directory, True, len(records) - 1)


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
