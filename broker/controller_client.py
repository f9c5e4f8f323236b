"""Requests from a broker to the active controller.

The broker knows the controllers only as `controller.quorum.voters`. A
request goes to the controller last known to be active; a NOT_CONTROLLER
answer names the active one by id (its address is in the voters), or -1
while there is none, in which case the next voter is tried after a short
backoff. An unreachable controller is skipped the same way. Every call is
bounded by its own deadline; past it the call raises ControllerUnavailable
and the caller decides (retry later, or answer the client with an error).

A dynamic quorum's broker starts with only the bootstrap servers and learns
the voters' own ids and addresses from the metadata log (`update`). The
channels it stops using are closed only once no call can still be on them:
grpc.aio cancels the calls of a channel it closes, and the coroutine
awaiting such a call gets asyncio.CancelledError - which, unhandled, ended
the broker's registration task without a word (a broker that never
registered, or registered and never caught up, found by the multi-host
test).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional

import grpc
from google.protobuf.message import Message

from kafka_protocol import grpc_keepalive
from kafka_protocol.errors import Errors
from kraftlog_api import controller_pb2_grpc as cpb_grpc
from security.ssl_config import SslConfig
from security.tls import open_aio_channel

log = logging.getLogger(__name__)

NO_CONTROLLER = -1
RETRY_BACKOFF_S = 0.1

CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", 8 << 20),
    ("grpc.max_receive_message_length", 8 << 20),
    # A restarted controller must be reachable again at once, not after
    # gRPC's default reconnect backoff (up to two minutes).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # A controller's host gone without a RST: pings find the dead connection, the next call reconnects.
    *grpc_keepalive.CHANNEL_OPTIONS,
]


class ControllerUnavailable(Exception):
    """No controller answered as the active one before the call's deadline."""


def cancelled_by_us() -> bool:
    """In an `except asyncio.CancelledError` around a gRPC call: True when the
    task itself is being cancelled (the error must propagate); False when only
    the call was cancelled under it, as grpc.aio does to the calls of a
    channel being closed - a failed attempt like any other."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def reraise_cancellation() -> None:
    """Call in an `except grpc.aio.AioRpcError`: when the task awaiting the
    call is being cancelled, grpc.aio may report it as an RPC error (a race
    between the cancellation and the call's end). Treating that as a failed
    call to retry would swallow the cancellation, and a stopping loop would
    run on forever."""
    if cancelled_by_us():
        raise asyncio.CancelledError()


class ControllerClient:
    def __init__(self, controllers: dict[int, str], *, attempt_timeout_s: float,
                 ssl: Optional[SslConfig] = None) -> None:
        if not controllers:
            raise ValueError("no controllers to talk to")
        self.controllers = dict(sorted(controllers.items()))
        self.attempt_timeout_s = attempt_timeout_s
        self.ssl = ssl  # None: plaintext
        self.active_id: Optional[int] = None  # the controller to ask first
        self._order = list(self.controllers)
        self._next = 0
        self._channels: dict[int, grpc.aio.Channel] = {}
        self._stubs: dict[int, cpb_grpc.KRaftControllerStub] = {}
        self._retired: set[grpc.aio.Channel] = set()  # replaced by `update`, closed once idle
        self._closed = False

    def _stub(self, controller_id: int) -> cpb_grpc.KRaftControllerStub:
        stub = self._stubs.get(controller_id)
        if stub is None:
            channel = open_aio_channel(self.controllers[controller_id], CHANNEL_OPTIONS, self.ssl)
            self._channels[controller_id] = channel
            stub = self._stubs[controller_id] = cpb_grpc.KRaftControllerStub(channel)
        return stub

    def _candidate(self) -> int:
        if self.active_id is not None:
            return self.active_id
        candidate = self._order[self._next % len(self._order)]
        self._next += 1
        return candidate

    async def call(self, rpc: str, request: Message, *, timeout_s: float) -> Message:
        """`rpc` (a KRaftController method name) answered by the active
        controller. Any answer but NOT_CONTROLLER is returned as it is."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        last = "no attempt"
        while not self._closed:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            target = self._candidate()
            try:
                response = await getattr(self._stub(target), rpc)(
                    request, timeout=min(self.attempt_timeout_s, remaining))
            except grpc.aio.AioRpcError as exc:
                reraise_cancellation()
                last = f"controller {target}: {exc.code().name}"
                self._forget(target)
                await asyncio.sleep(min(RETRY_BACKOFF_S, max(deadline - loop.time(), 0)))
                continue
            except asyncio.CancelledError:
                if cancelled_by_us():
                    raise
                # Its channel was closed under it (see the module's docstring).
                last = f"controller {target}: call cancelled"
                self._forget(target)
                await asyncio.sleep(min(RETRY_BACKOFF_S, max(deadline - loop.time(), 0)))
                continue
            except grpc.aio.UsageError:
                break  # closed under us
            if response.error_code != Errors.NOT_CONTROLLER:
                # A bootstrap server that `update` replaced mid-call is no longer asked.
                self.active_id = target if target in self.controllers else None
                return response
            named = response.controller_id
            last = f"controller {target} is not active (active: {named})"
            if named in self.controllers and named != target:
                self.active_id = named  # ask it at once
                continue
            self._forget(target)
            await asyncio.sleep(min(RETRY_BACKOFF_S, max(deadline - loop.time(), 0)))
        raise ControllerUnavailable(f"{rpc}: no active controller within {timeout_s:g}s ({last})")

    def update(self, controllers: dict[int, str]) -> None:
        """A dynamic quorum's voters moved (KIP-853): ask these from now on.
        A controller whose address changed gets a new channel."""
        if not controllers or controllers == self.controllers:
            return
        for controller_id in list(self._stubs):
            if self.controllers.get(controller_id) != controllers.get(controller_id):
                self._stubs.pop(controller_id)
                self._retire(self._channels.pop(controller_id))
        self.controllers = dict(sorted(controllers.items()))
        self._order = list(self.controllers)
        if self.active_id not in self.controllers:
            self.active_id = None

    def _retire(self, channel: grpc.aio.Channel) -> None:
        """Close `channel` once every call begun on it has met its deadline
        (an attempt lasts at most attempt_timeout_s), not under them."""
        self._retired.add(channel)

        def close() -> None:
            if channel in self._retired:
                self._retired.discard(channel)
                asyncio.ensure_future(channel.close())
        asyncio.get_running_loop().call_later(self.attempt_timeout_s + 1.0, close)

    def _forget(self, controller_id: int) -> None:
        if self.active_id == controller_id:
            self.active_id = None

    async def close(self) -> None:
        self._closed = True
        channels = [*self._channels.values(), *self._retired]
        self._channels.clear()
        self._stubs.clear()
        self._retired.clear()
        if channels:
            await asyncio.wait([asyncio.ensure_future(c.close()) for c in channels], timeout=1.0)
