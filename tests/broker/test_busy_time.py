"""broker/busy_time.py: only the steps a coroutine runs count, on a clock
that also moves while it is suspended; values, exceptions and cancellation
pass through as if the coroutine were awaited directly."""
from __future__ import annotations

import asyncio
import contextvars

import pytest

from broker.busy_time import BusyTime


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_only_the_running_steps_count_and_the_value_returns():
    clock = FakeClock()

    async def handler() -> str:
        clock.now += 0.25              # works
        await asyncio.sleep(0.01)      # suspended: another task moves the clock meanwhile
        clock.now += 0.5               # works again
        await asyncio.sleep(0)
        return "answer"

    async def others() -> None:
        await asyncio.sleep(0)
        clock.now += 100.0

    async def scenario() -> tuple[str, float]:
        timed = BusyTime(handler(), clock)
        answer, _ = await asyncio.gather(timed, others())
        return answer, timed.busy_s

    answer, busy = asyncio.run(scenario())
    assert answer == "answer"
    assert busy == pytest.approx(0.75)


def test_an_exception_passes_through_and_its_steps_count():
    clock = FakeClock()

    async def failing() -> None:
        await asyncio.sleep(0)
        clock.now += 2.0
        raise ValueError("refused")

    async def scenario() -> BusyTime[None]:
        timed = BusyTime(failing(), clock)
        with pytest.raises(ValueError, match="refused"):
            await timed
        return timed

    assert asyncio.run(scenario()).busy_s == pytest.approx(2.0)


def test_cancellation_reaches_the_coroutine():
    seen: list[str] = []

    async def long_poll() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def scenario() -> None:
        task = asyncio.ensure_future(BusyTime(long_poll()))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert seen == ["cancelled"]


def test_a_coroutine_may_answer_its_cancellation():
    async def stubborn() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "gave up cleanly"
        return "never"

    async def scenario() -> str:
        task = asyncio.ensure_future(BusyTime(stubborn()))
        await asyncio.sleep(0)
        task.cancel()
        return await task

    assert asyncio.run(scenario()) == "gave up cleanly"


def test_failed_awaitables_inside_raise_inside_and_context_is_the_callers():
    caller = contextvars.ContextVar("caller", default="nobody")

    async def handler() -> str:
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_exception, KeyError("gone"))
        try:
            await future
        except KeyError:
            return caller.get()
        return "not raised"

    async def scenario() -> str:
        caller.set("alice")
        return await BusyTime(handler())

    assert asyncio.run(scenario()) == "alice"
