"""Producer ids: blocks from the controller used in order, the next block
asked for at 90% of the current one, InitProducerId's answers. `allocate`
stands for the AllocateProducerIds call (the real one runs in
tests/kraftlog/test_idempotence.py against a real controller quorum)."""
from __future__ import annotations

import asyncio

import pytest

from broker.errors import BrokerError, Error
from broker.producer_ids import MAX_EPOCH, ProducerIdBlocks, ProducerIdManager, handle_init_producer_id
from kafka_protocol.batch import epoch_exhausted
from kraftlog_api import broker_pb2 as bpb

BLOCK = 1000


class Controller:
    """Blocks of BLOCK ids in order, as the controller's ProducerIdsRecords hand them out."""

    def __init__(self, *, fail_first: int = 0) -> None:
        self.next_id = 0
        self.calls = 0
        self.fail_first = fail_first

    async def allocate(self) -> tuple[int, int]:
        self.calls += 1
        await asyncio.sleep(0)
        if self.calls <= self.fail_first:
            raise BrokerError(Error.REQUEST_TIMED_OUT, "no active controller")
        start, self.next_id = self.next_id, self.next_id + BLOCK
        return start, BLOCK


def test_blocks_are_used_in_order_and_the_next_is_wanted_at_ninety_percent() -> None:
    blocks = ProducerIdBlocks()
    assert blocks.take() is None and blocks.wants_block
    blocks.add(0, 10)
    assert [blocks.take() for _ in range(8)] == list(range(8)) and not blocks.wants_block
    assert blocks.take() == 8 and blocks.wants_block  # 9 of 10 used
    blocks.add(50, 10)
    assert not blocks.wants_block
    assert [blocks.take() for _ in range(3)] == [9, 50, 51]
    with pytest.raises(ValueError):
        blocks.add(5, 0)


def test_ids_are_distinct_and_the_next_block_is_fetched_before_the_current_runs_out() -> None:
    controller = Controller()

    async def go():
        ids = ProducerIdManager(controller.allocate, wait_s=5)
        first = [await ids.generate() for _ in range(900)]
        await asyncio.sleep(0.01)
        calls_at_ninety_percent = controller.calls
        rest = [await ids.generate() for _ in range(1600)]
        await ids.close()
        return first + rest, calls_at_ninety_percent
    got, calls_at_ninety_percent = asyncio.run(go())
    assert got == list(range(2500))
    assert calls_at_ninety_percent == 2  # the second block was asked for while 100 ids were left
    assert controller.calls == 3


def test_no_block_in_time_is_coordinator_load_in_progress_and_a_later_call_succeeds() -> None:
    controller = Controller(fail_first=1)

    async def go():
        ids = ProducerIdManager(controller.allocate, wait_s=0.05)
        with pytest.raises(BrokerError) as caught:
            await ids.generate()
        await asyncio.sleep(0.3)  # past the failure backoff
        ids.wait_s = 30  # the controller answers now: bound the wait by it, not by a short timer
        later = await ids.generate()
        await ids.close()
        return caught.value, later
    refused, later = asyncio.run(go())
    assert refused.error == Error.COORDINATOR_LOAD_IN_PROGRESS and "no active controller" in refused.message
    assert later == 0


def init(ids: ProducerIdManager, **fields) -> bpb.InitProducerIdResponse:
    request = bpb.InitProducerIdRequest(**{"producer_id": -1, "producer_epoch": -1, **fields})
    return asyncio.run(handle_init_producer_id(ids, request))


@pytest.fixture
def ids() -> ProducerIdManager:
    return ProducerIdManager(Controller().allocate, wait_s=5)


def test_init_producer_id_answers(ids) -> None:
    fresh = init(ids)
    assert (fresh.error_code, fresh.producer_id, fresh.producer_epoch) == (Error.NONE, 0, 0)
    assert epoch_exhausted(MAX_EPOCH - 1) and not epoch_exhausted(MAX_EPOCH - 2)
    # An idempotent producer naming its id and epoch (KIP-360) gets a new id at epoch 0, as from Kafka: a
    # bump of the named id would let anyone fence the producer that owns it (tests/adversarial's case).
    given = {fresh.producer_id}
    for named in ({"producer_id": 0, "producer_epoch": 4}, {"producer_id": 0, "producer_epoch": MAX_EPOCH - 1},
                  {"producer_id": 2**63 - 6, "producer_epoch": 3}):
        answer = init(ids, **named)
        assert (answer.error_code, answer.producer_epoch) == (Error.NONE, 0), named
        assert answer.producer_id not in given and answer.producer_id != named["producer_id"], named
        given.add(answer.producer_id)


@pytest.mark.parametrize("fields, error, words", [
    ({"transactional_id": "tx"}, Error.UNSUPPORTED_VERSION, "transactions are not supported"),
    ({"producer_epoch": 2}, Error.INVALID_REQUEST, "without a producer id"),
    ({"producer_id": 3, "producer_epoch": -1}, Error.INVALID_REQUEST, "epoch in [0, 32767]"),
    ({"producer_id": -5, "producer_epoch": 0}, Error.INVALID_REQUEST, "expected an id >= 0"),
])
def test_init_producer_id_refusals(ids, fields, error, words) -> None:
    answer = init(ids, **fields)
    assert answer.error_code == error and words in answer.error_message
    assert (answer.producer_id, answer.producer_epoch) == (-1, -1)
