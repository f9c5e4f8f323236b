"""Codec details that interoperability depends on."""
from __future__ import annotations

import zstandard

from kafka_protocol.compression import Codec, compress, decompress


def test_zstd_batches_of_several_frames_decode_whole():
    # Java's and kafka-python's readers take every frame of a batch; so must we.
    data = zstandard.ZstdCompressor().compress(b"first-") + zstandard.ZstdCompressor().compress(b"second")
    assert decompress(Codec.ZSTD, data) == b"first-second"


def test_snappy_is_xerial_framed_like_kafkas_java_client():
    framed = compress(Codec.SNAPPY, b"x" * 100_000)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert decompress(Codec.SNAPPY, framed) == b"x" * 100_000
