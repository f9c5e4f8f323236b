"""The rate windows and throttle times of broker/client_quota_manager.py, on a fake clock."""
from __future__ import annotations

import pytest

from broker.client_quota_manager import ClientQuotaManager, SampledRate
from security.client_quotas import CLIENT_ID, PRODUCER_BYTE_RATE, USER

APP = ((CLIENT_ID, "app"),)
DEFAULT_CLIENT = ((CLIENT_ID, None),)


def test_a_young_rate_divides_by_at_least_ten_windows():
    rate = SampledRate(samples=11, window_s=1.0)
    rate.record(1000, now=0.0)
    assert rate.window_size_s(0.0) == pytest.approx(10.0)
    assert rate.measure(0.0) == pytest.approx(100.0)
    for second in range(1, 16):
        rate.record(1000, now=float(second))
    # 16 records of 1000 bytes, of which the last 11 windows are kept: 11 000 bytes over 10 s
    assert rate.measure(15.0) == pytest.approx(1100.0)


def test_samples_older_than_the_span_are_forgotten():
    rate = SampledRate(samples=11, window_s=1.0)
    rate.record(5000, now=0.0)
    assert rate.measure(10.5) == pytest.approx(5000 / 10.5)
    assert rate.measure(11.0) == 0.0


def test_within_the_quota_nothing_is_throttled():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    quotas = {APP: {PRODUCER_BYTE_RATE: 1000.0}}
    assert all(manager.record_and_get_throttle_time_ms(quotas, None, "app", 900, now=float(t)) == 0
               for t in range(30))


def test_over_the_quota_the_throttle_brings_the_rate_back_to_it():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    quotas = {APP: {PRODUCER_BYTE_RATE: 1000.0}}
    # 1000 bytes a second for 10 s: exactly the quota
    assert all(manager.record_and_get_throttle_time_ms(quotas, None, "app", 1000, now=float(t)) == 0
               for t in range(10))
    # a burst: 16 000 bytes over 10 s is 1600/s, 60% over: throttled 60% of the 10 s window
    assert manager.record_and_get_throttle_time_ms(quotas, None, "app", 6000, now=10.0) == 6000
    # after waiting that out (the first samples forgotten), the rate is back at the quota
    assert manager.record_and_get_throttle_time_ms(quotas, None, "app", 0, now=16.0) == 0


def test_a_first_burst_is_spread_over_the_minimum_window():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    # 15 000 bytes at once over the minimum 10 s window: 1500/s, half again the quota: throttled 5 s
    assert manager.record_and_get_throttle_time_ms({APP: {PRODUCER_BYTE_RATE: 1000.0}}, None, "app", 15_000,
                                                   now=0.0) == 5000


def test_the_throttle_is_bounded_by_the_measured_span():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    throttle = manager.record_and_get_throttle_time_ms({APP: {PRODUCER_BYTE_RATE: 1.0}}, None, "app", 10**9, 0.0)
    assert throttle == manager.max_throttle_ms == 11_000


def test_no_quota_no_throttle_and_no_rate_kept():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    assert manager.record_and_get_throttle_time_ms({APP: {"consumer_byte_rate": 1.0}}, "alice", "app", 10**9, 0.0) == 0
    assert len(manager) == 0


def test_each_client_under_a_default_quota_has_its_own_rate():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    quotas = {DEFAULT_CLIENT: {PRODUCER_BYTE_RATE: 1000.0}}
    assert manager.record_and_get_throttle_time_ms(quotas, None, "a", 15_000, 0.0) > 0
    assert manager.record_and_get_throttle_time_ms(quotas, None, "b", 9_000, 0.0) == 0  # not a's bytes
    assert len(manager) == 2


def test_the_most_specific_entity_wins():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    quotas = {DEFAULT_CLIENT: {PRODUCER_BYTE_RATE: 10.0}, ((USER, "alice"),): {PRODUCER_BYTE_RATE: 10_000.0},
              ((CLIENT_ID, "app"), (USER, None)): {PRODUCER_BYTE_RATE: 1.0}}
    # alice's own quota comes before any default-user or client-only one
    assert manager.record_and_get_throttle_time_ms(quotas, "alice", "app", 50_000, 0.0) == 0
    # bob: the default user with client app
    assert manager.record_and_get_throttle_time_ms(quotas, "bob", "app", 50, 0.0) > 0
    # no session (no user): only the client-id entities
    assert manager.record_and_get_throttle_time_ms(quotas, None, "app", 50, 0.0) == 0
    assert manager.record_and_get_throttle_time_ms(quotas, None, "app", 500, 0.0) > 0


def test_idle_clients_are_forgotten():
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE)
    quotas = {DEFAULT_CLIENT: {PRODUCER_BYTE_RATE: 1000.0}}
    for i in range(100):
        manager.record_and_get_throttle_time_ms(quotas, None, f"c{i}", 1, 0.0)
    assert len(manager) == 100
    manager.record_and_get_throttle_time_ms(quotas, None, "late", 1, 11.0)
    assert len(manager) == 1


def test_the_request_quota_measures_percent_of_the_loop_and_throttles_at_most_one_window():
    from broker.client_quota_manager import ClientQuotas
    from security.client_quotas import REQUEST_PERCENTAGE
    request = ClientQuotas().request
    quotas = {APP: {REQUEST_PERCENTAGE: 1.0}}  # 1 % of the loop: 0.1 s of handler time over the 10 s minimum
    # 0.05 s busy = 5 percent-seconds over 10 s: 0.5 %
    assert request.record_and_get_throttle_time_ms(quotas, None, "app", 0.05 * 100, now=0.0) == 0
    # 0.0555 s more: 1.055 %, back at 1 % after (1.055 - 1) / 1 x 10 s
    assert request.record_and_get_throttle_time_ms(quotas, None, "app", 0.0555 * 100, now=0.0) == 550
    # far over it: Kafka bounds a request throttle by one window, not the whole span
    assert request.record_and_get_throttle_time_ms(quotas, None, "app", 5.0 * 100, now=0.0) == 1000
    assert request.record_and_get_throttle_time_ms(quotas, None, "other", 5.0 * 100, now=0.0) == 0
