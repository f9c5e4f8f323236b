"""Crash-safe small files: write a temp file, fsync, rename, fsync the folder.

After a crash the file holds either the old or the new content, never a mix.
Kafka's checkpoint text format ("version", "count", then one entry a line) is
used by the leader-epoch and offset checkpoints built on this.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from kafka_protocol.errors import KafkaStorageError


def write_atomically(path: Path, data: bytes | Iterable[bytes], *, temp_suffix: str = ".tmp") -> None:
    """Replace `path` with `data` (bytes, or chunks of them) so that a crash leaves old or new.

    The temporary file is `path` + `temp_suffix` (Kafka names a snapshot's `.part`).
    """
    tmp = path.with_name(path.name + temp_suffix)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for chunk in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
                view = memoryview(chunk)
                while view:  # os.write may write less than asked
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        raise KafkaStorageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(path: Path, version: int, lines: list[str]) -> None:
    text = f"{version}\n{len(lines)}\n" + "".join(f"{line}\n" for line in lines)
    write_atomically(path, text.encode("ascii"))


def read_small_file(path: Path, what: str) -> str | None:
    """An ASCII file's text; None if absent, ValueError if unreadable."""
    try:
        return path.read_text("ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: unreadable {what}: {exc}") from exc


def read_checkpoint(path: Path, version: int, fields: int) -> list[list[str]] | None:
    """Entries of a checkpoint file, each split into `fields` parts; None if absent.

    A malformed file raises ValueError naming the file and line: a checkpoint
    is ours, so damage means the disk lied and the caller must decide.
    """
    text = read_small_file(path, "checkpoint")
    if text is None:
        return None
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != str(version):
        raise ValueError(f"{path}: expected checkpoint version {version}, found {lines[:1]}")
    try:
        count = int(lines[1])
    except ValueError:
        raise ValueError(f"{path}: line 2 is not an entry count: {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != count or any(len(e) != fields for e in entries):
        raise ValueError(f"{path}: says {count} entries of {fields} fields, found {entries!r}")
    return entries
