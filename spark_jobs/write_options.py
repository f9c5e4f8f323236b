"""The kraftlog sink's options and input columns, as Spark's Kafka sink has them.

Columns: `value` (required, binary or string), optional `key` (binary or
string), `topic` (string; the `topic` option overrides it), `partition`
(int; else the key's murmur2 partition, as Kafka's producer) and `headers`
(array<struct<key: string, value: binary>>). Producer settings use Kafka's
names, given as `kraftlog.<setting>` (as Spark's `kafka.<setting>`) or plain
(`acks`, `compression.type`, `linger.ms`, ...), and are checked by the
producer's own ProducerConfig so that a typo fails at once. The security
settings among them (`kraftlog.security.protocol`, `kraftlog.ssl.*`,
`kraftlog.sasl.*`) are kept apart, out of every repr: they hold passwords.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from pyspark.sql.types import ArrayType, BinaryType, DataType, IntegerType, StringType, StructType

from client.errors import InvalidConfigError
from client.producer_config import ProducerConfig
from security.client_security import CLIENT_SECURITY_KEYS, ClientSecurity

from .options import BOOTSTRAP, CLIENT_PREFIX, Options, option_error, parse_security

PRODUCER_PREFIX = CLIENT_PREFIX
# Settings the sink leaves to itself: where to connect comes from kraftlog.bootstrap.servers.
_NOT_PRODUCER = {"topic", "checkpointlocation", "path", "bootstrap.servers", "writerid", "batchid",
                 "sink.exactlyonce"}
# Streaming writes whose micro-batch is visible atomically (exactly_once_sink); off: the idempotent sink.
EXACTLY_ONCE = "kraftlog.sink.exactlyOnce"
_UNDOTTED = {"acks", "retries"}
# A Spark batch writes a lot at once; Kafka's 16 KiB default batches would mean many small requests.
SINK_BATCH_SIZE = 256 * 1024


@dataclass(frozen=True)
class WriteOptions:
    bootstrap: str
    topic: Optional[str]  # the `topic` option: every row goes there
    producer: Mapping[str, str]  # Kafka producer settings, checked
    columns: frozenset[str]
    # A batch write that is one of a series (foreachBatch): with both, it is
    # idempotent per (writerId, batchId) as streaming writes are per micro-batch.
    writer_id: Optional[str] = None
    batch_id: Optional[int] = None
    security_settings: Mapping[str, str] = field(default_factory=dict, repr=False)  # security.protocol, ssl.*, sasl.*
    exactly_once: bool = False  # kraftlog.sink.exactlyOnce: one prepared transaction per task (exactly_once_sink)

    @property
    def security(self) -> ClientSecurity:
        return parse_security(self.security_settings)


def parse_write_options(raw: Mapping[str, str], schema: StructType, *, streaming: bool) -> WriteOptions:
    options = Options(raw)
    bootstrap = options.required(BOOTSTRAP)
    topic = options.get("topic")
    columns = _check_columns(schema, topic)
    producer = {"batch.size": str(SINK_BATCH_SIZE)}
    security: dict[str, str] = {}
    for key, value in raw.items():
        name = key.lower()
        setting = name[len(PRODUCER_PREFIX):] if name.startswith(PRODUCER_PREFIX) else name
        if name == BOOTSTRAP or setting in _NOT_PRODUCER:
            continue
        # Kafka's producer settings have dots (linger.ms) but for acks and retries;
        # ProducerConfig refuses any it does not know, naming it.
        if setting in CLIENT_SECURITY_KEYS:
            security[setting] = str(value)
        elif name.startswith(PRODUCER_PREFIX) or "." in setting or setting in _UNDOTTED:
            producer[setting] = str(value)
    writer_id = options.get("writerId")
    batch_id = options.integer("batchId", None)
    if (writer_id is None) != (batch_id is None):
        raise option_error("writerId" if writer_id is None else "batchId",
                           "give both writerId and batchId for an idempotent batch write, or neither")
    exactly_once = options.boolean(EXACTLY_ONCE, False)
    if exactly_once and not streaming:
        raise option_error(EXACTLY_ONCE, "is for streaming writes (writeStream); a batch write is idempotent "
                                         "with writerId and batchId")
    if exactly_once and "transactional.id" in producer:
        raise option_error("transactional.id", f"the sink sets one per task with {EXACTLY_ONCE}=true")
    if streaming or writer_id is not None:
        # A replayed micro-batch is deduplicated by the idempotent producer (see idempotent_sink).
        if producer.get("enable.idempotence", "true").lower() == "false":
            raise option_error("enable.idempotence", "streaming writes are idempotent per micro-batch; it cannot "
                                                     "be false")
        if producer.get("acks", "all").lower() not in ("all", "-1"):
            raise option_error("acks", "must be all for streaming writes (they use the idempotent producer)")
    parse_security(security)
    try:
        ProducerConfig.parse({"bootstrap.servers": bootstrap, **producer})
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"producer option {str(exc).split(': ', 1)[-1]}") from None
    return WriteOptions(bootstrap, topic.strip() if topic else None, producer, columns, writer_id, batch_id, security,
                        exactly_once)


_EXPECTED: dict[str, tuple[tuple[type, ...], str]] = {
    "key": ((BinaryType, StringType), "binary or string"),
    "value": ((BinaryType, StringType), "binary or string"),
    "topic": ((StringType,), "string"),
    "partition": ((IntegerType,), "int"),
}


def _check_columns(schema: StructType, topic_option: Optional[str]) -> frozenset[str]:
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if "value" not in fields:
        raise InvalidConfigError(f"column 'value': required, but the input has only "
                                 f"{', '.join(f.name for f in schema.fields) or 'no columns'}")
    if "topic" not in fields and not topic_option:
        raise option_error("topic", "required when the input has no 'topic' column")
    for name, (types, words) in _EXPECTED.items():
        if name in fields and not isinstance(fields[name], types):
            raise InvalidConfigError(f"column '{name}': must be {words}, not {fields[name].simpleString()}")
    if "headers" in fields and not _is_headers(fields["headers"]):
        raise InvalidConfigError(f"column 'headers': must be array<struct<key:string,value:binary>>, not "
                                 f"{fields['headers'].simpleString()}")
    return frozenset(n for n in fields if n in ("key", "value", "topic", "partition", "headers"))


def _is_headers(data_type: DataType) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    inner = {f.name: f.dataType for f in data_type.elementType.fields}
    return isinstance(inner.get("key"), StringType) and isinstance(inner.get("value"), (BinaryType, StringType)) \
        and len(inner) == 2


def producer_config(options: WriteOptions, **overrides: Any) -> dict[str, Any]:
    return {"bootstrap.servers": options.bootstrap, **options.producer, **options.security_settings, **overrides}
