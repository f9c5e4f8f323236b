"""Random joins, leaves, crashes with session expiries, heartbeats with and
without the client acting on its assignment, and topic growth: never two
owners of a partition, revocations only of partitions the member's target
no longer holds, and once everyone heartbeats the group converges to a
complete, balanced assignment that the records alone rebuild."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.groups.assignors import range_assignor, uniform

from .sim import Sim

SUBSCRIPTIONS = [("orders",), ("orders", "payments"), ("payments",)]
NAMES = "abc"

# An op: (kind, client name, subscription or topic choice, act on the assignment before heartbeating).
# Weighted towards heartbeats (sampled_from weighs by repetition): their
# interleavings are where ownership could go wrong.
KINDS = ["heartbeat"] * 12 + ["join"] * 3 + ["leave", "crash", "expire", "grow"]
op = st.tuples(st.sampled_from(KINDS), st.sampled_from(NAMES), st.integers(0, len(SUBSCRIPTIONS) - 1),
               st.booleans())
join = st.tuples(st.just("join"), st.sampled_from(NAMES), st.integers(0, len(SUBSCRIPTIONS) - 1), st.just(False))
ops = st.builds(lambda joins, rest: joins + rest, st.lists(join, min_size=1, max_size=3),
                st.lists(op, min_size=10, max_size=80))


def apply(sim: Sim, op: tuple) -> None:
    kind, name, choice, act = op
    client = sim.clients.get(name)
    if kind == "join" and client is None:
        sim.join(name, SUBSCRIPTIONS[choice])
    elif kind == "leave" and client is not None:
        sim.leave(name)
    elif kind == "crash" and client is not None:
        sim.crash(name)
    elif kind == "heartbeat" and client is not None:
        if act:
            sim.process(client)
        before = client.told
        if sim.heartbeat(client).error_code:
            return  # removed for not revoking in time: it rejoins at its next heartbeat
        revoked = before - client.told
        target = sim.group.members[client.member_id].target
        assert not revoked & target, f"{client.name} lost {revoked & target}, still in its target"
    elif kind == "expire":
        sim.expire_all_silent()
    elif kind == "grow":
        topic = ("orders", "payments")[choice % 2]
        sim.topics[topic] = min(sim.topics[topic] + 1, 12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.sampled_from([None, "range"]))
def test_never_two_owners_and_eventual_convergence(script, assignor) -> None:
    sim = Sim({"orders": 6, "payments": 4}, assignor=assignor)
    for op in script:
        apply(sim, op)
        if sim.clients:
            sim.check_no_two_owners()
    sim.expire_all_silent()
    if not sim.clients:
        return
    sim.converge()
    sim.check_no_two_owners()
    subscribed = {t for c in sim.clients.values() for t in c.topics}
    everything = {(t, p) for t in subscribed for p in range(sim.topics[t])}
    assert set().union(*(c.owned for c in sim.clients.values())) == everything
    for client in sim.clients.values():
        assert all(t in client.topics for t, _ in client.owned)
    if assignor is None and len({c.topics for c in sim.clients.values()}) == 1:
        counts = [len(c.owned) for c in sim.clients.values()]
        assert max(counts) - min(counts) <= 1
    rebuilt = sim.replayed().groups["g"]
    assert rebuilt.owners == sim.group.owners and rebuilt.epoch == sim.group.epoch
    assert {m: x.current for m, x in rebuilt.members.items()} == {m: x.current for m, x in sim.group.members.items()}


members = st.dictionaries(st.sampled_from(NAMES), st.sampled_from([frozenset(s) for s in SUBSCRIPTIONS]),
                          min_size=1)
topic_sizes = st.fixed_dictionaries({"orders": st.integers(0, 20), "payments": st.integers(0, 20)})


@given(members, topic_sizes, st.data())
def test_assignors_cover_every_subscribed_partition_once(subscriptions, topics, data) -> None:
    previous = data.draw(st.dictionaries(st.sampled_from(NAMES), st.frozensets(
        st.tuples(st.sampled_from(["orders", "payments"]), st.integers(0, 25)), max_size=10)))
    for assignor in (uniform, range_assignor):
        result = assignor(subscriptions, topics, previous)
        assert set(result) == set(subscriptions)
        flat = [tp for parts in result.values() for tp in parts]
        assert len(flat) == len(set(flat))
        wanted = {(t, p) for t, n in topics.items() if any(t in s for s in subscriptions.values())
                  for p in range(n)}
        assert set(flat) == wanted
        assert all(t in subscriptions[m] for m, parts in result.items() for t, _ in parts)


@given(st.integers(1, 6), st.integers(0, 40))
def test_uniform_is_sticky_when_a_member_joins(count, partitions) -> None:
    subscriptions = {f"m{i}": frozenset({"orders"}) for i in range(count)}
    before = uniform(subscriptions, {"orders": partitions}, {})
    after = uniform({**subscriptions, "new": frozenset({"orders"})}, {"orders": partitions}, before)
    assert all(after[m] <= before[m] for m in subscriptions)  # old members only give up partitions
    sizes = [len(p) for p in after.values()]
    assert max(sizes) - min(sizes) <= 1
