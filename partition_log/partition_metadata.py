"""A partition directory's `partition.metadata`: the id of the topic it
belongs to, in Kafka's format:

    version: 0
    topic_id: <the id as Kafka prints a Uuid: url-safe base64, no padding>

Topic names are reused (a topic deleted and made again under its name), ids
never: a directory whose file names another id than the metadata's topic is
a leftover of a deleted topic and must not be served as the new one's
partition. The broker writes the file when it creates a partition's
directory and checks it when it finds one at start (broker/replica_manager.py).
The file is replaced atomically (a crash leaves the old one or the new one)
but not fsynced: a directory whose file was lost in a crash is one written
by the same replica a moment earlier, which the broker adopts and labels again.
"""
from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Optional

from kafka_protocol.errors import KafkaStorageError

from .checkpoint import read_small_file

FILE_NAME = "partition.metadata"
VERSION = 0


def topic_id_text(topic_id: bytes) -> str:
    return base64.urlsafe_b64encode(topic_id).rstrip(b"=").decode("ascii")


def write(directory: Path, topic_id: bytes) -> None:
    path = directory / FILE_NAME
    tmp = directory / (FILE_NAME + ".tmp")
    try:
        tmp.write_text(f"version: {VERSION}\ntopic_id: {topic_id_text(topic_id)}\n", "ascii")
        os.replace(tmp, path)
    except OSError as exc:
        raise KafkaStorageError(f"cannot write {path}: {exc.strerror or exc}") from exc


class UnreadableMetadata(ValueError):
    """The file exists but is not a version 0 partition.metadata."""


def read(directory: Path) -> Optional[bytes]:
    """The topic id the directory's file names; None when it has none
    (made by software that wrote no such file, or lost in a crash)."""
    path = directory / FILE_NAME
    try:
        text = read_small_file(path, FILE_NAME)
    except ValueError as exc:
        raise UnreadableMetadata(str(exc)) from exc
    if text is None:
        return None
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    if fields.get("version") != str(VERSION) or "topic_id" not in fields:
        raise UnreadableMetadata(f"{path}: not a version {VERSION} partition.metadata: {text[:80]!r}")
    encoded = fields["topic_id"].strip()
    try:
        topic_id = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError) as exc:
        raise UnreadableMetadata(f"{path}: topic_id {encoded!r} is not a Uuid") from exc
    if len(topic_id) != 16:
        raise UnreadableMetadata(f"{path}: topic_id {encoded!r} is not 16 bytes")
    return topic_id
