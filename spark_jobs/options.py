"""The kraftlog source's options, with the names of Spark's Kafka source.

Spark hands a Python data source its options with lower-cased keys, so every
lookup here is case-insensitive; error messages use Spark's spelling of the
option so that a user finds it in their code. Everything here is pure: it
parses text into plain, picklable values (the reader ships them to
executors). Resolving `earliest`/`latest`/timestamps to offsets needs the
cluster and happens in `topic_offsets`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Mapping, Optional

from client.errors import InvalidConfigError
from security.client_security import CLIENT_SECURITY_KEYS, ClientSecurity

BOOTSTRAP = "kraftlog.bootstrap.servers"
# Client settings pass as Spark's Kafka source passes `kafka.<setting>`: kraftlog.security.protocol, ...
CLIENT_PREFIX = "kraftlog."
EARLIEST, LATEST = -2, -1  # Kafka's ListOffsets timestamps, and Spark's offsets JSON
READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Kafka's isolation_level

TopicPartition = tuple[str, int]


def option_error(option: str, detail: str) -> InvalidConfigError:
    return InvalidConfigError(f"option '{option}': {detail}")


class Options:
    """Case-insensitive view of a data source's options."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._values = {k.lower(): str(v) for k, v in options.items()}

    def get(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return self._values.get(name.lower(), default)

    def has(self, name: str) -> bool:
        return name.lower() in self._values

    def required(self, name: str) -> str:
        value = self.get(name)
        if value is None or not value.strip():
            raise option_error(name, "is required")
        return value.strip()

    def integer(self, name: str, default: Optional[int], minimum: int = 0) -> Optional[int]:
        text = self.get(name)
        if text is None:
            return default
        try:
            value = int(text.strip())
        except ValueError:
            raise option_error(name, f"{text!r} is not an integer") from None
        if value < minimum:
            raise option_error(name, f"{value} is below {minimum}")
        return value

    def client_security_settings(self) -> dict[str, str]:
        """kraftlog.security.protocol, kraftlog.ssl.*, kraftlog.sasl.* without the prefix."""
        return {key[len(CLIENT_PREFIX):]: value for key, value in self._values.items()
                if key.startswith(CLIENT_PREFIX) and key[len(CLIENT_PREFIX):] in CLIENT_SECURITY_KEYS}

    def boolean(self, name: str, default: bool) -> bool:
        text = self.get(name)
        if text is None:
            return default
        if text.strip().lower() not in ("true", "false"):
            raise option_error(name, f"{text!r} is not true or false")
        return text.strip().lower() == "true"


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: exactly one of subscribe, subscribePattern, assign."""

    option: str  # the option that gave it, for error messages
    topics: tuple[str, ...] = ()
    pattern: Optional[str] = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics


def parse_subscription(options: Options) -> Subscription:
    given = [name for name in ("subscribe", "subscribePattern", "assign") if options.has(name)]
    if len(given) != 1:
        raise option_error("subscribe", "give exactly one of 'subscribe', 'subscribePattern' or 'assign'"
                           + (f" (got {', '.join(given)})" if given else ""))
    name = given[0]
    text = options.required(name)
    if name == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
        if not topics:
            raise option_error(name, "names no topic")
        return Subscription(name, topics=topics)
    if name == "subscribePattern":
        try:
            re.compile(text)
        except re.error as exc:
            raise option_error(name, f"{text!r} is not a regular expression ({exc})") from None
        return Subscription(name, pattern=text)
    parsed = _json_object(name, text)
    assigned: list[TopicPartition] = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not all(isinstance(p, int) and p >= 0 for p in partitions):
            raise option_error(name, f'expected {{"topic":[0,1,...]}}, got {json.dumps({topic: partitions})}')
        assigned.extend((topic, p) for p in partitions)
    if not assigned:
        raise option_error(name, "assigns no partition")
    return Subscription(name, topics=tuple(parsed), assigned=tuple(sorted(set(assigned))))


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends. `default` (EARLIEST/LATEST) holds for
    every partition not in `offsets`; `offsets` come from JSON (offsets, or
    -2/-1); `timestamps` ask ListOffsets for the first offset at or after
    a timestamp (one `timestamp` for every partition, or per partition)."""

    option: str
    default: Optional[int] = None
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    timestamp: Optional[int] = None
    timestamps: tuple[tuple[TopicPartition, int], ...] = ()
    # Spark's startingOffsetsByTimestampStrategy: "error" fails when no
    # record is at or after the timestamp, "latest" takes the latest offset.
    timestamp_strategy: str = "error"


def parse_offset_spec(options: Options, side: str, *, streaming: bool) -> OffsetSpec:
    """`side` is "starting" or "ending"; Spark's precedence: xTimestamp, then
    xOffsetsByTimestamp, then xOffsets."""
    strategy = (options.get(f"{side}OffsetsByTimestampStrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise option_error(f"{side}OffsetsByTimestampStrategy", f"{strategy!r} is not error or latest")
    if options.has(f"{side}Timestamp"):
        stamp = options.integer(f"{side}Timestamp", None)
        return OffsetSpec(f"{side}Timestamp", timestamp=stamp, timestamp_strategy=strategy)
    if options.has(f"{side}OffsetsByTimestamp"):
        name = f"{side}OffsetsByTimestamp"
        stamps = _partition_numbers(name, options.required(name), minimum=0)
        return OffsetSpec(name, timestamps=stamps, timestamp_strategy=strategy)
    name = f"{side}Offsets"
    text = (options.get(name) or ("latest" if streaming or side == "ending" else "earliest")).strip()
    if side == "ending" and streaming and options.has(name):
        raise option_error(name, "is for batch queries only (Spark's Kafka source refuses it in streaming)")
    if text.lower() == "earliest":
        if side == "ending":
            raise option_error(name, "cannot be earliest (a batch read would end before it starts)")
        return OffsetSpec(name, default=EARLIEST)
    if text.lower() == "latest":
        if side == "starting" and not streaming:
            raise option_error(name, "cannot be latest for a batch query (it would read nothing)")
        return OffsetSpec(name, default=LATEST)
    offsets = _partition_numbers(name, text, minimum=EARLIEST)
    for tp, offset in offsets:
        if side == "ending" and offset == EARLIEST:
            raise option_error(name, f"{tp[0]}-{tp[1]}: -2 (earliest) is not allowed as an ending offset")
    return OffsetSpec(name, offsets=offsets)


def _partition_numbers(option: str, text: str, minimum: int) -> tuple[tuple[TopicPartition, int], ...]:
    """{"topic":{"0":23,"1":-2}} -> ((("topic", 0), 23), (("topic", 1), -2))."""
    parsed = _json_object(option, text)
    out: list[tuple[TopicPartition, int]] = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise option_error(option, f'expected {{"topic":{{"0":offset,...}}}}, got {json.dumps({topic: partitions})}')
        for key, number in partitions.items():
            if not key.isdigit() or not isinstance(number, int) or isinstance(number, bool) or number < minimum:
                raise option_error(option, f'{topic}: "{key}": {json.dumps(number)} is not a partition and a '
                                           f"number >= {minimum}")
            out.append(((topic, int(key)), number))
    return tuple(out)


def _json_object(option: str, text: str) -> dict:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise option_error(option, f"{text!r} is not earliest, latest or JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(parsed, dict):
        raise option_error(option, f"{text!r} is not a JSON object")
    return parsed


def parse_security(settings: Mapping[str, str]) -> ClientSecurity:
    """The client's security from its settings (the option names without their kraftlog. prefix)."""
    try:
        return ClientSecurity.from_config(settings)
    except InvalidConfigError as exc:  # its message names the setting and never a secret
        raise InvalidConfigError(f"security options ({CLIENT_PREFIX}security.protocol, {CLIENT_PREFIX}ssl.*, "
                                 f"{CLIENT_PREFIX}sasl.*): {exc.args[0]}") from None


def cluster_options(bootstrap: str, settings: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The source's and the sink's options that reach a cluster: its bootstrap
    servers, and a client's settings with Kafka's names (a --command-config
    file's security.protocol, ssl.*, sasl.*) as kraftlog.security.protocol, ...
    Other settings are left out (the caller says which it ignored); bad
    security settings fail here, before Spark starts a query."""
    security = {key: str(value) for key, value in (settings or {}).items() if key in CLIENT_SECURITY_KEYS}
    parse_security(security)
    return {BOOTSTRAP: bootstrap, **{CLIENT_PREFIX + key: value for key, value in security.items()}}


@dataclass(frozen=True)
class ReadOptions:
    """Everything a read needs, parsed once on the driver."""

    bootstrap: str
    subscription: Subscription
    starting: OffsetSpec
    ending: Optional[OffsetSpec]  # batch only
    max_offsets_per_trigger: Optional[int]
    min_partitions: Optional[int]
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    fetch_max_bytes: int
    security: ClientSecurity = ClientSecurity()  # its repr hides passwords; shipped to each task
    read_committed: bool = False  # kafka.isolation.level=read_committed: up to the LSO, aborted records dropped

    @property
    def isolation_level(self) -> int:
        """Fetch's and ListOffsets' isolation_level: 1 read_committed, 0 read_uncommitted."""
        return READ_COMMITTED if self.read_committed else READ_UNCOMMITTED


ISOLATION_LEVEL_OPTIONS = ("kafka.isolation.level", CLIENT_PREFIX + "isolation.level")


def parse_isolation_level(options: Options) -> bool:
    """Spark's Kafka source option `kafka.isolation.level` (or kraftlog.isolation.level,
    as the other client settings): read_uncommitted (default) or read_committed."""
    given = {name: options.get(name).strip().lower() for name in ISOLATION_LEVEL_OPTIONS  # type: ignore[union-attr]
             if options.get(name) is not None}
    if len(set(given.values())) > 1:
        raise option_error(ISOLATION_LEVEL_OPTIONS[0], f"{ISOLATION_LEVEL_OPTIONS[1]} says otherwise")
    for name, value in given.items():
        if value not in ("read_uncommitted", "read_committed"):
            raise option_error(name, f"{value!r} is not read_uncommitted or read_committed")
        return value == "read_committed"
    return False


def parse_read_options(raw: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    options = Options(raw)
    return ReadOptions(
        bootstrap=options.required(BOOTSTRAP),
        subscription=parse_subscription(options),
        starting=parse_offset_spec(options, "starting", streaming=streaming),
        ending=None if streaming else parse_offset_spec(options, "ending", streaming=False),
        max_offsets_per_trigger=options.integer("maxOffsetsPerTrigger", None, minimum=1),
        min_partitions=options.integer("minPartitions", None, minimum=1),
        fail_on_data_loss=options.boolean("failOnDataLoss", True),
        include_headers=options.boolean("includeHeaders", False),
        # Spark's kafkaConsumer.pollTimeoutMs: how long a task waits for data it was told exists.
        poll_timeout_ms=options.integer("kafkaConsumer.pollTimeoutMs", 120_000, minimum=1) or 120_000,
        fetch_max_bytes=options.integer("fetch.max.bytes", 4 << 20, minimum=1024) or (4 << 20),
        security=parse_security(options.client_security_settings()),
        read_committed=parse_isolation_level(options),
    )
