"""A SASL_SSL Kafka-protocol listener on a real node (one combined node:
mTLS between its listeners, the StandardAuthorizer, SCRAM users made as
the launcher's admin certificate), reached by Kafka clients nobody here
wrote: confluent-kafka (librdkafka), kafka-python 3 and aiokafka log in
with SCRAM-SHA-512, PLAIN and SCRAM-SHA-256, write and read back; a user
without Write gets TOPIC_AUTHORIZATION_FAILED from the same ACL checks the
gRPC listeners use; a wrong password and an untrusted CA are refused, and
the listener keeps serving. (Hostile clients: tests/adversarial/test_hostile_kafka_sasl.py.)"""
from __future__ import annotations

import asyncio
import secrets
import subprocess
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.helpers import create_ssl_context
from confluent_kafka import KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonTopicPartition

from client.cluster import Cluster
from client.security_admin import ScramUpsertion, alter_user_scram_credentials, create_acls
from devcluster.local_cluster import LocalCluster
from devcluster.secured import allow, secured_properties
from kafka_protocol.errors import Errors
from kafka_protocol.wire import versions
from kraftlog_server.server_config import KAFKA_PROTOCOL_LISTENERS
from security import certs
from security.acl import AclOperation, ResourceType
from security.sasl_protocol import invalid_credentials_message
from security.scram_credentials import DEFAULT_ITERATIONS, ScramMechanism
from tests.kafka_protocol.kafka_client_reads import read_assigned
from tests.kafka_protocol.kafka_sasl_helpers import TlsKafka, api_versions, login, request

TOPIC = "secured-kafka"
WAIT_S = 30.0  # bounds every wait; never part of an assert
ALICE, BOB = "alice", "bob"   # alice may write and read TOPIC; bob may only read it


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    properties = {**secured_properties([1]), "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
                  KAFKA_PROTOCOL_LISTENERS: "CLIENTS"}
    with LocalCluster(tmp_path_factory.mktemp("kafka-sasl"), combined=1, tls=True, client_listener="SASL_SSL",
                      properties=properties).running() as c:
        c.create_topic(TOPIC, 1, 1)
        c.wait_for_leaders(TOPIC)
        c.passwords = {ALICE: secrets.token_urlsafe(18), BOB: secrets.token_urlsafe(18)}
        acls = [allow(f"User:{ALICE}", operation, ResourceType.TOPIC, TOPIC)
                for operation in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)]
        acls += [allow(f"User:{BOB}", operation, ResourceType.TOPIC, TOPIC)
                 for operation in (AclOperation.READ, AclOperation.DESCRIBE)]
        with Cluster(c.bootstrap, c.security) as admin:
            refused = alter_user_scram_credentials(admin, [
                ScramUpsertion(user, mechanism, password, DEFAULT_ITERATIONS)
                for user, password in c.passwords.items() for mechanism in ScramMechanism])
            assert all(error is None for error in refused.values())
            assert all(error is None for error in create_acls(admin, acls))
        for user in (ALICE, BOB):
            wait_until_described(c, user)
        yield c


def truststore(cluster: LocalCluster) -> str:
    return str(cluster.security.ssl.truststore_location)


def wait_until_described(cluster: LocalCluster, user: str) -> None:
    """Until `user` logs in on the Kafka listener and may describe TOPIC:
    its credentials and ACLs reached the broker's image."""
    deadline, last = time.monotonic() + WAIT_S, None
    while time.monotonic() < deadline:
        with TlsKafka(cluster.client_bootstrap, truststore(cluster)) as conn:
            last = login(conn, "SCRAM-SHA-512", user, cluster.passwords[user]).error_code
            if last == 0:
                meta = conn.call(request(versions.METADATA, 12, {
                    "topics": [{"topic_id": None, "name": TOPIC}], "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False}), correlation_id=3)
                last = meta.topics[0].error_code
                if last == 0:
                    return
        time.sleep(0.2)
    raise TimeoutError(f"{user} could not describe {TOPIC} over the Kafka listener (last error {last})")


def librdkafka_settings(cluster: LocalCluster, user: str, mechanism: str = "SCRAM-SHA-512",
                        password: str | None = None, ca: str | None = None) -> dict:
    return {"bootstrap.servers": cluster.client_bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": cluster.passwords[user] if password is None else password,
            "ssl.ca.location": ca or truststore(cluster), "socket.timeout.ms": 10000}


def values(tag: str, count: int = 5) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(count)]


# -- Kafka's clients over SASL_SSL ---------------------------------------------------------

def test_confluent_kafka_writes_and_reads_with_scram_sha_512(cluster):
    sent = values(f"librdkafka-{uuid.uuid4().hex[:6]}")
    delivered: list = []
    producer = Producer({**librdkafka_settings(cluster, ALICE), "acks": "all"})
    for value in sent:
        producer.produce(TOPIC, value, partition=0, on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(WAIT_S) == 0
    assert [err for err, _ in delivered] == [None] * len(sent)
    offsets = [msg.offset() for _, msg in delivered]

    got = read_assigned(librdkafka_settings(cluster, ALICE), [TopicPartition(TOPIC, 0, offsets[0])], len(sent),
                        WAIT_S)
    assert [(m.offset(), m.value()) for m in got] == list(zip(offsets, sent))


def test_kafka_python_writes_and_reads_with_plain(cluster):
    sent = values(f"kafka-python-{uuid.uuid4().hex[:6]}")
    settings = {"bootstrap_servers": cluster.client_bootstrap, "security_protocol": "SASL_SSL",
                "sasl_mechanism": "PLAIN", "sasl_plain_username": ALICE,
                "sasl_plain_password": cluster.passwords[ALICE], "ssl_cafile": truststore(cluster),
                "request_timeout_ms": 10000}
    producer = KafkaProducer(acks="all", **settings)   # idempotent by default: InitProducerId as alice
    try:
        futures = [producer.send(TOPIC, value=value, partition=0) for value in sent]
        producer.flush(timeout=WAIT_S)
        offsets = [future.get(timeout=WAIT_S).offset for future in futures]
    finally:
        producer.close(timeout=10)
    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, consumer_timeout_ms=int(WAIT_S * 1000),
                             **settings)
    try:
        partition = KafkaPythonTopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek(partition, offsets[0])
        got = []
        for message in consumer:
            got.append((message.offset, message.value))
            if len(got) == len(sent):
                break
    finally:
        consumer.close()
    assert got == list(zip(offsets, sent))


def test_aiokafka_writes_and_reads_with_scram_sha_256(cluster):
    sent = values(f"aiokafka-{uuid.uuid4().hex[:6]}")

    async def main() -> list:
        settings = {"bootstrap_servers": cluster.client_bootstrap, "security_protocol": "SASL_SSL",
                    "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": ALICE,
                    "sasl_plain_password": cluster.passwords[ALICE],
                    "ssl_context": create_ssl_context(cafile=truststore(cluster)), "request_timeout_ms": 10000}
        producer = AIOKafkaProducer(acks="all", **settings)
        await producer.start()
        try:
            offsets = [(await producer.send_and_wait(TOPIC, value, partition=0)).offset for value in sent]
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(group_id=None, enable_auto_commit=False, **settings)
        await consumer.start()
        try:
            partition = AioTopicPartition(TOPIC, 0)
            consumer.assign([partition])
            consumer.seek(partition, offsets[0])
            got = []
            while len(got) < len(sent):
                message = await asyncio.wait_for(consumer.getone(), WAIT_S)
                got.append((message.offset, message.value))
        finally:
            await consumer.stop()
        return [got, offsets]

    got, offsets = asyncio.run(main())
    assert got == list(zip(offsets, sent))


def test_kcat_writes_and_reads_with_plain(cluster, tmp_path):
    """kcat on Debian's librdkafka 2.0, settings in a file (-F: no password on a command line).
    PLAIN, not SCRAM: librdkafka before 2.6.1 sends the client nonce twice in
    its client-final message, which the server refuses, as Kafka 4 does (RFC 5802)."""
    settings = tmp_path / "kcat.conf"
    settings.write_text("".join(f"{key}={value}\n" for key, value in {
        **librdkafka_settings(cluster, ALICE, "PLAIN"), "sasl.mechanisms": "PLAIN"}.items()
        if key != "sasl.mechanism"))
    tag = f"kcat-{uuid.uuid4().hex[:6]}"
    base = ["kcat", "-F", str(settings), "-t", TOPIC, "-p", "0"]
    wrote = subprocess.run([*base, "-P"], input=f"{tag}-a\n{tag}-b\n", text=True, timeout=WAIT_S,
                           capture_output=True)
    assert wrote.returncode == 0, wrote.stderr
    read = subprocess.run([*base, "-C", "-o", "beginning", "-e", "-q"], text=True, check=True, timeout=WAIT_S,
                          capture_output=True)
    assert [line for line in read.stdout.splitlines() if line.startswith(tag)] == [f"{tag}-a", f"{tag}-b"]


# -- what the listener refuses ---------------------------------------------------------------

def test_a_user_without_write_gets_topic_authorization_failed(cluster):
    delivered: list = []
    producer = Producer({**librdkafka_settings(cluster, BOB), "acks": "all", "retries": 0,
                         "message.timeout.ms": 20000})
    producer.produce(TOPIC, b"not allowed", partition=0, on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(WAIT_S)
    assert [err.code() for err in delivered] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def errors_seen(settings: dict, wait_s: float = 15.0) -> list:
    """The errors librdkafka reports (error_cb) while it tries to reach the broker."""
    errors: list = []
    producer = Producer({**settings, "error_cb": errors.append})
    deadline = time.monotonic() + wait_s
    while not errors and time.monotonic() < deadline:
        producer.poll(0.5)
    producer.flush(0)
    return errors


def test_a_wrong_password_is_refused_with_kafkas_message(cluster):
    errors = errors_seen(librdkafka_settings(cluster, ALICE, password="not-" + cluster.passwords[ALICE]))
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert invalid_credentials_message("SCRAM-SHA-512") in errors[0].str()
    with TlsKafka(cluster.client_bootstrap, truststore(cluster)) as conn:   # the same answer, on the wire
        answer = login(conn, "SCRAM-SHA-512", ALICE, "wrong-password")
        assert (answer.error_code, answer.error_message) == (Errors.SASL_AUTHENTICATION_FAILED,
                                                            invalid_credentials_message("SCRAM-SHA-512"))
        assert conn.closed_by_broker()
    wait_until_described(cluster, ALICE)   # still serving


def test_an_untrusted_ca_fails_the_tls_handshake(cluster, tmp_path):
    certs.init_ca(tmp_path, name="someone else's CA")
    errors = errors_seen(librdkafka_settings(cluster, ALICE, ca=str(tmp_path / certs.CA_CERT)))
    assert errors and errors[0].code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
    assert "certificate verify failed" in " ".join(e.str() for e in errors)
    with TlsKafka(cluster.client_bootstrap, truststore(cluster)) as conn:
        assert conn.call(api_versions()).error_code == 0   # still serving
