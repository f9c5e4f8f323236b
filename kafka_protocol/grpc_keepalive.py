"""HTTP/2 keepalive for long-polled calls between nodes, and what a server
must permit for it.

A call whose request has been sent sends nothing more until its answer
arrives. If the connection under it dies without a RST reaching this end (a
NAT or proxy that dropped its state, a host that vanished, a reset lost on
the way), TCP has nothing to retransmit and never notices: the call sits
until its deadline (a follower's fetch: replica.fetch.wait.max.ms plus the
30 s request timeout) and the follower drops out of the ISR meanwhile.
With keepalive, gRPC pings a connection that has read nothing for
KEEPALIVE_TIME_MS while a call is open; a connection that then reads
nothing (no ping ack, no data: a slow link still carrying an answer counts
as alive) for KEEPALIVE_TIMEOUT_MS is closed, its calls fail UNAVAILABLE
and the caller reconnects. A dead peer that still answers (its host sends a
RST for the unknown connection) is found at the first ping.

No pings without calls: an idle channel has nothing to lose, and servers
limit pings on idle connections to one per two hours (RFC 1122's TCP
keepalive) whatever they are told.
"""
from __future__ import annotations

KEEPALIVE_TIME_MS = 2000
KEEPALIVE_TIMEOUT_MS = 4000

# For the channels that make such calls (a channel's options).
CHANNEL_OPTIONS = (
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 0),
    # A keepalive due while another ping is unanswered (gRPC's own
    # bandwidth probe, sent with the answers) waits on that ping, whose
    # timeout is a minute unless set: set alike.
    ("grpc.http2.ping_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    # gRPC stops pinging after two pings that sent no data between them
    # (a long wait for one answer is just that); 0: no limit.
    ("grpc.http2.max_pings_without_data", 0),
)

# For every server those channels call: by default a server takes pings more
# often than every 5 minutes while calls are open for abuse and, after two,
# closes the connection (GOAWAY too_many_pings). Half the client's interval
# leaves room for pings that a busy network delivers close together.
SERVER_OPTIONS = (
    ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
)
