"""partition.metadata: Kafka's format, and what a damaged file reads as."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from partition_log import partition_metadata as pm


def test_the_file_is_kafkas_and_reads_back(tmp_path):
    topic_id = uuid.UUID("6f1b2a3c-4d5e-6f70-8192-a3b4c5d6e7f8").bytes
    pm.write(tmp_path, topic_id)
    # Kafka prints a Uuid as url-safe base64 without padding.
    assert (tmp_path / pm.FILE_NAME).read_text() == "version: 0\ntopic_id: bxsqPE1eb3CBkqO0xdbn-A\n"
    assert pm.read(tmp_path) == topic_id
    assert not (tmp_path / (pm.FILE_NAME + ".tmp")).exists()


def test_a_directory_without_the_file_has_no_topic_id(tmp_path):
    assert pm.read(tmp_path) is None


@pytest.mark.parametrize("text", [
    "", "version: 1\ntopic_id: bxsqPE1eb3CBkqO0xdbn-A\n", "version: 0\n", "version: 0\ntopic_id: !!!\n",
    "version: 0\ntopic_id: AAAA\n", "\xff\xfe", "version: 0\ntopic_id: " + "A" * 10_000 + "\n",
])
def test_a_damaged_file_is_unreadable_not_a_topic_id(tmp_path, text):
    (tmp_path / pm.FILE_NAME).write_bytes(text.encode("latin-1"))
    with pytest.raises(pm.UnreadableMetadata):
        pm.read(tmp_path)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=300),
                 st.text(max_size=60).map(lambda t: f"version: 0\ntopic_id: {t}\n".encode("utf-8", "surrogatepass"))))
def test_any_bytes_read_as_a_topic_id_none_or_unreadable(tmp_path, data):
    """A damaged or hostile file never raises anything but UnreadableMetadata, nor names a short id."""
    (tmp_path / pm.FILE_NAME).write_bytes(data)
    try:
        topic_id = pm.read(tmp_path)
    except pm.UnreadableMetadata:
        return
    assert topic_id is None or len(topic_id) == 16
