"""Serving a protobuf service so that undecodable requests get INVALID_ARGUMENT.

gRPC decodes a request before the handler runs and reports a decode failure
as UNKNOWN with a Python exception name in it. Registering the methods with
raw bytes and decoding here gives the client INVALID_ARGUMENT and a message
naming the request type instead, the status gRPC defines for malformed input.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import DecodeError


def add_service(server: grpc.aio.Server, service: ServiceDescriptor, servicer: Any) -> None:
    """Serve `servicer`'s async methods, one per RPC of `service` (unary-unary only)."""
    handlers = {m.name: _unary_handler(m, getattr(servicer, m.name, None) or _unimplemented(m))
                for m in service.methods}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))


def _unimplemented(method: MethodDescriptor) -> Callable[..., Awaitable[Any]]:
    """A method the servicer lacks answers UNIMPLEMENTED, as gRPC does for an unknown method."""
    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method.full_name} is not served by this node")
    return refuse


def _unary_handler(method: MethodDescriptor, implementation: Callable[..., Awaitable[Any]]) -> grpc.RpcMethodHandler:
    if method.client_streaming or method.server_streaming:
        raise ValueError(f"{method.full_name}: only unary RPCs are served this way")
    request_class = message_factory.GetMessageClass(method.input_type)

    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        try:
            request = request_class.FromString(raw)
        except DecodeError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed {request_class.__name__}: {exc}")
        return await implementation(request, context)

    return grpc.unary_unary_rpc_method_handler(handle, request_deserializer=None, response_serializer=_serialized)


def _serialized(response: Any) -> bytes:
    """A handler may answer with the message already encoded (the broker's
    Fetch splices record batches in without protobuf copying them)."""
    return response if isinstance(response, bytes) else response.SerializeToString()
