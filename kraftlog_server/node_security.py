"""A node's authentication and authorization state, shared by its listeners.

`SaslServers`: the SASL servers of the node's SASL listeners (one for those
over TLS, which may offer PLAIN, one for the others), looking credentials up
in the node's metadata image and counting logins for the metrics.
`follow_acls`: keeps the node's NodeAuthorizer on the ACLs of its image.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from metadata_quorum.metadata_state import MetadataStateMachine
from security.authorization import NodeAuthorizer
from security.listeners import SecurityProtocol
from security.sasl_server import SaslServer
from security.scram_credentials import ScramCredential, ScramMechanism

from .server_config import ServerConfig


class SaslServers:
    """The node's SASL servers, one per kind of listener (PLAIN only over
    TLS), sharing the credentials of the node's metadata image."""

    def __init__(self, config: ServerConfig, metadata: Optional[MetadataStateMachine]) -> None:
        self.config = config
        self.metadata = metadata
        self._servers: dict[bool, SaslServer] = {}
        self.outcomes: Counter[tuple[str, bool]] = Counter()  # (mechanism, succeeded) -> logins, for metrics

    def _lookup(self, user: str, mechanism: ScramMechanism) -> Optional[ScramCredential]:
        return self.metadata.image.scram_credentials.get((user, mechanism)) if self.metadata is not None else None

    def _count(self, mechanism: str, succeeded: bool) -> None:
        self.outcomes[(mechanism, succeeded)] += 1

    def for_listener(self, protocol: SecurityProtocol) -> SaslServer:
        tls = protocol.uses_tls
        if tls not in self._servers:
            settings = self.config.security
            self._servers[tls] = SaslServer(self._lookup, settings.mechanisms_for(tls), tls=tls,
                                            max_reauth_ms=settings.max_reauth_ms, on_outcome=self._count)
        return self._servers[tls]


def follow_acls(access: NodeAuthorizer, metadata: MetadataStateMachine) -> None:
    """Keep `access` on the ACLs of the node's image: loaded with the first
    image the node applies (until then only super users pass), reloaded when
    a change touches ACLs or a snapshot replaces the image."""
    seen = {"image": None}

    def on_metadata(image, delta) -> None:
        if not access.ready or delta.changed_acls or image is not seen["image"]:
            access.load_acls(image.acl_index())
            seen["image"] = image

    metadata.add_listener(on_metadata)
