"""Kafka's JSON files for kafka-reassign-partitions.sh, read strictly and written as Kafka writes them.

A reassignment: {"version":1,"partitions":[{"topic":"t","partition":0,
"replicas":[1,2],"log_dirs":["any","any"]}, ...]}; `log_dirs` is optional,
and only "any" is accepted (moving a replica between a broker's log
directories is not supported here). Topics to move: {"version":1,
"topics":[{"topic":"t"}, ...]}. A file that is not exactly that - wrong
types, a partition listed twice, a broker twice in one list, an empty list
- raises ValueError naming what is wrong, before anything is asked of the
cluster.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

TopicPartition = tuple[str, int]
ANY_LOG_DIR = "any"
INT32_MAX = 2**31 - 1


def parse_reassignment(text: str) -> dict[TopicPartition, list[int]]:
    """(topic, partition) -> target replicas, in file order."""
    document = _document(text, "partitions")
    targets: dict[TopicPartition, list[int]] = {}
    for index, entry in enumerate(document["partitions"]):
        where = f"partitions[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} is not an object")
        unknown = set(entry) - {"topic", "partition", "replicas", "log_dirs"}
        if unknown:
            raise ValueError(f"{where} has unknown field(s) {sorted(unknown)}")
        topic = _topic(entry, where)
        partition = entry.get("partition")
        if not _is_int(partition) or not 0 <= partition <= INT32_MAX:
            raise ValueError(f"{where}: partition must be an integer from 0 to {INT32_MAX}")
        replicas = entry.get("replicas")
        if not isinstance(replicas, list) or not replicas:
            raise ValueError(f"{where} ({topic}-{partition}): replicas must be a non-empty list of broker ids")
        if not all(_is_int(b) and 0 <= b <= INT32_MAX for b in replicas):
            raise ValueError(f"{where} ({topic}-{partition}): replicas must be broker ids (0 to {INT32_MAX})")
        if len(set(replicas)) != len(replicas):
            raise ValueError(f"{topic}-{partition}: the replicas {replicas} list a broker more than once")
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise ValueError(f"{topic}-{partition}: log_dirs must list one directory per replica")
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise ValueError(f"{topic}-{partition}: only the log directory \"any\" is supported")
        if (topic, partition) in targets:
            raise ValueError(f"the partition {topic}-{partition} is listed more than once")
        targets[(topic, partition)] = list(replicas)
    if not targets:
        raise ValueError("the reassignment lists no partitions")
    return targets


def parse_topics_to_move(text: str) -> list[str]:
    """The topic names of a --topics-to-move-json-file, each once, in file order."""
    document = _document(text, "topics")
    names: list[str] = []
    for index, entry in enumerate(document["topics"]):
        if not isinstance(entry, dict) or set(entry) - {"topic"}:
            raise ValueError(f"topics[{index}] must be an object with only a \"topic\"")
        name = _topic(entry, f"topics[{index}]")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("the file lists no topics")
    return names


def reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """The reassignment file for `assignment`, partitions sorted, as Kafka prints it (one line)."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": list(replicas),
         "log_dirs": [ANY_LOG_DIR] * len(replicas)}
        for (topic, partition), replicas in sorted(assignment.items())]}, separators=(",", ":"))


def _document(text: str, key: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError("the file must hold one JSON object")
    version = document.get("version", 1)
    if version != 1 or not _is_int(version):
        raise ValueError(f"unsupported version {version!r}: only 1 is known")
    unknown = set(document) - {"version", key}
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}")
    if not isinstance(document.get(key), list):
        raise ValueError(f"\"{key}\" must be a list")
    return document


def _topic(entry: Mapping[str, Any], where: str) -> str:
    topic = entry.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"{where}: topic must be a non-empty string")
    return topic


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
