"""gRPC health checking (grpc.health.v1) of one node's listener: what a
container's HEALTHCHECK, a Kubernetes probe or a script asks before
trusting a node (`kraftlog health`). A node reports SERVING for a listener
once that listener's services are ready (kraftlog_server/server.py)."""
from __future__ import annotations

from typing import Optional

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from security.client_security import ClientSecurity

from .channels import open_channel

SERVING = "SERVING"


def check_health(address: str, security: Optional[ClientSecurity] = None, service: str = "",
                 timeout: float = 5.0) -> str:
    """The listener's status for `service` ("" is the whole server): SERVING,
    NOT_SERVING, SERVICE_UNKNOWN, or the gRPC code of a failed call (UNAVAILABLE, ...)."""
    with open_channel(address, security) as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                               timeout=timeout)
        except grpc.RpcError as exc:
            return exc.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
