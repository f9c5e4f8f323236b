"""The source's options and offset planning, without Spark or a cluster."""
from __future__ import annotations

import pytest

from client.errors import InvalidConfigError
from spark_jobs.options import EARLIEST, LATEST, parse_read_options
from spark_jobs.planning import OffsetRange, from_offset_json, offset_ranges, rate_limit, to_offset_json

BASE = {"kraftlog.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a,b"}


def test_option_names_are_case_insensitive_as_spark_lower_cases_them() -> None:
    lower = parse_read_options({k.lower(): v for k, v in {
        **BASE, "startingOffsets": '{"a":{"0":5,"1":-2}}', "maxOffsetsPerTrigger": "10",
        "includeHeaders": "TRUE", "failOnDataLoss": "false", "minPartitions": "4"}.items()}, streaming=True)
    assert lower.subscription.topics == ("a", "b")
    assert dict(lower.starting.offsets) == {("a", 0): 5, ("a", 1): EARLIEST}
    assert (lower.max_offsets_per_trigger, lower.include_headers, lower.fail_on_data_loss,
            lower.min_partitions) == (10, True, False, 4)


def test_spark_defaults_batch_earliest_to_latest_streaming_latest() -> None:
    batch = parse_read_options(BASE, streaming=False)
    assert (batch.starting.default, batch.ending.default) == (EARLIEST, LATEST)
    stream = parse_read_options(BASE, streaming=True)
    assert stream.starting.default == LATEST and stream.ending is None
    assert parse_read_options({**BASE, "startingTimestamp": "1000"}, streaming=True).starting.timestamp == 1000


@pytest.mark.parametrize("options, named", [
    ({"subscribe": "a", "startingOffsets": "{bad json"}, "startingOffsets"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"x":1}}'}, "startingOffsets"),
    ({"subscribe": "a", "startingOffsets": '{"a":[1]}'}, "startingOffsets"),
    ({"subscribe": "a", "startingOffsets": "latest"}, "startingOffsets"),   # batch: would read nothing
    ({"subscribe": "a", "endingOffsets": "earliest"}, "endingOffsets"),
    ({"subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, "endingOffsets"),
    ({"subscribe": "a", "assign": '{"a":[0]}'}, "subscribe"),              # two subscriptions
    ({}, "subscribe"),
    ({"assign": '{"a":["x"]}'}, "assign"),
    ({"subscribePattern": "a("}, "subscribePattern"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "ten"}, "maxOffsetsPerTrigger"),
    ({"subscribe": "a", "minPartitions": "0"}, "minPartitions"),
    ({"subscribe": "a", "failOnDataLoss": "maybe"}, "failOnDataLoss"),
])
def test_bad_options_name_the_option(options, named) -> None:
    with pytest.raises(InvalidConfigError) as caught:
        parse_read_options({"kraftlog.bootstrap.servers": "h:1", **options}, streaming=False)
    assert f"option '{named}'" in str(caught.value) and str(caught.value).startswith("INVALID_CONFIG")


def test_missing_bootstrap_is_named() -> None:
    with pytest.raises(InvalidConfigError, match="option 'kraftlog.bootstrap.servers': is required"):
        parse_read_options({"subscribe": "a"}, streaming=True)


def test_ranges_skip_empty_partitions_and_new_ones_start_earliest() -> None:
    ranges = offset_ranges({("a", 0): 5, ("a", 1): 7}, {("a", 0): 9, ("a", 1): 7, ("a", 2): 3, ("a", 3): 0})
    assert ranges == [OffsetRange("a", 0, 5, 9), OffsetRange("a", 2, EARLIEST, 3)]


def test_min_partitions_splits_in_proportion_to_size_and_covers_every_offset_once() -> None:
    ranges = offset_ranges({("a", 0): 0, ("a", 1): 100}, {("a", 0): 300, ("a", 1): 200}, min_partitions=4)
    assert len(ranges) == 4
    assert [r for r in ranges if r.partition == 0] == [OffsetRange("a", 0, 0, 100), OffsetRange("a", 0, 100, 200),
                                                      OffsetRange("a", 0, 200, 300)]
    assert [r for r in ranges if r.partition == 1] == [OffsetRange("a", 1, 100, 200)]


def test_rate_limit_shares_max_rows_by_lag() -> None:
    starts = {("a", 0): 0, ("a", 1): 0, ("a", 2): 10}
    latest = {("a", 0): 300, ("a", 1): 100, ("a", 2): 11}
    ends = rate_limit(starts, latest, 100)
    assert ends == {("a", 0): 74, ("a", 1): 24, ("a", 2): 11}
    assert sum(ends[tp] - starts[tp] for tp in ends) <= 100 + len(ends)
    assert rate_limit(starts, latest, 10_000) == latest


def test_offset_json_round_trips_in_sparks_shape() -> None:
    offsets = {("a", 0): 5, ("a", 10): 2, ("b", 1): 0}
    assert to_offset_json(offsets) == {"a": {"0": 5, "10": 2}, "b": {"1": 0}}
    assert from_offset_json(to_offset_json(offsets)) == offsets
