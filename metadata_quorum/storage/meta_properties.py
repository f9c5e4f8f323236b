"""`meta.properties`: which cluster and node a metadata log directory belongs to.

Kafka's format (version 1, the KRaft one), Java properties text:

    #<comment>
    version=1
    cluster.id=<id>
    node.id=<n>
    directory.id=<base64url UUID>

Written once, by `kraftlog storage format` or on first start; afterwards a
node refuses a directory that names another cluster or another node, rather
than mixing their data. `directory.id` (KIP-853, also Kafka's field) is made
with the file: with the node id it is the replica key of a dynamic quorum's
voter, so a wiped and reformatted disk is a new replica. A file written
before it existed gets one on the next start, the rest kept as it is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from kafka_protocol.errors import InvalidConfigError
from kafka_protocol.properties_text import parse_properties
from metadata_quorum.raft.voters import check_directory_id, uuid_text

from .errors import InconsistentClusterIdError, StorageError, replace_file

FILE_NAME = "meta.properties"
VERSION = 1


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    version: int = VERSION
    directory_id: Optional[str] = None

    def to_text(self) -> str:
        directory = "" if self.directory_id is None else f"directory.id={self.directory_id}\n"
        return (f"#Written by kraftlog\nversion={self.version}\n"
                f"cluster.id={self.cluster_id}\nnode.id={self.node_id}\n{directory}")

    @staticmethod
    def read(log_dir: Path) -> Optional["MetaProperties"]:
        """The directory's meta.properties; None if it has none."""
        path = Path(log_dir) / FILE_NAME
        try:
            text = path.read_text("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise StorageError(f"{path}: unreadable: {exc}") from exc
        try:
            values = parse_properties(text, str(path))
        except InvalidConfigError as exc:
            raise StorageError(exc.args[0]) from None
        try:
            version, cluster_id, node_id = values["version"], values["cluster.id"], values["node.id"]
        except KeyError as exc:
            raise StorageError(f"{path}: no {exc.args[0]}") from None
        if version != str(VERSION):
            raise StorageError(f"{path}: version={version}, only version {VERSION} (KRaft) is supported")
        directory_id = values.get("directory.id")
        try:
            check_directory_id(directory_id)
        except ValueError as exc:
            raise StorageError(f"{path}: directory.id: {exc}") from None
        try:
            return MetaProperties(cluster_id, int(node_id), directory_id=directory_id)
        except ValueError:
            raise StorageError(f"{path}: node.id={node_id!r} is not an integer") from None

    @staticmethod
    def ensure(log_dir: Path, cluster_id: str, node_id: int, directory_id: Optional[str] = None) -> "MetaProperties":
        """Write meta.properties on first start (with `directory_id`, else a new
        one); refuse a directory of another cluster or node. Returns what the
        directory holds (with its directory.id)."""
        _check_cluster_id(cluster_id)
        log_dir = Path(log_dir)
        path = log_dir / FILE_NAME
        found = MetaProperties.read(log_dir)
        if found is None:
            made = MetaProperties(cluster_id, node_id, directory_id=directory_id or new_directory_id())
            replace_file(path, made.to_text().encode("utf-8"))
            return made
        if found.cluster_id != cluster_id:
            raise InconsistentClusterIdError(
                f"{path}: the directory belongs to cluster {found.cluster_id!r}, not {cluster_id!r}")
        if found.node_id != node_id:
            raise StorageError(f"{path}: the directory belongs to node {found.node_id}, not node {node_id}")
        if found.directory_id is None:
            found = replace(found, directory_id=new_directory_id())
            replace_file(path, found.to_text().encode("utf-8"))
        return found


def new_directory_id() -> str:
    """A random directory id (Kafka's Uuid.randomUuid, base64url), never the zero UUID."""
    while True:
        text = uuid_text(os.urandom(16))
        if text is not None and not text.startswith("-"):  # Kafka avoids ids a CLI would take for options
            return text


def _check_cluster_id(cluster_id: str) -> None:
    # Nothing that would need escaping in a properties file, or break a line.
    if not cluster_id or cluster_id != cluster_id.strip() or "\\" in cluster_id or not cluster_id.isprintable():
        raise ValueError(f"cluster id {cluster_id!r} must be non-empty printable text without backslashes")
