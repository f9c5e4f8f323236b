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

No pings without calls from a channel: an idle channel has nothing to lose.

The servers ping too, every connection, idle or not, that has read nothing
for SERVER_KEEPALIVE_TIME_MS. A client that vanished while its packets
could not get through (a network partition: it gave up on the connection
by its own keepalive, and its FIN or RST was dropped on the way) leaves
the server's end ESTABLISHED; with no call open on it the server has
nothing to send, so nothing ever finds it dead: gRPC's own server
keepalive (two hours) is skipped on a connection without calls. Each
partition left such a socket per cut client on the controllers
(chaos/soak.py's fd growth). The ping meets the RST of the client's host,
or no ack within SERVER_KEEPALIVE_TIMEOUT_MS, and the connection is
closed. That timeout is longer than the chaos runs' pause (a stopped
process acks nothing until it is resumed), so a live client is not cut.
"""
from __future__ import annotations

KEEPALIVE_TIME_MS = 2000
KEEPALIVE_TIMEOUT_MS = 4000
# The servers' pings (below): a connection that has read nothing this long is pinged.
SERVER_KEEPALIVE_TIME_MS = 30_000
SERVER_KEEPALIVE_TIMEOUT_MS = 20_000

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
    # The server's own pings, which find a client gone (see above). Without
    # calls too (this also lets a server take a client's pings on an idle
    # connection, which the channels above never send), and without the
    # default limit of two pings while no data is sent: an idle connection
    # whose client vanishes later is still pinged.
    ("grpc.keepalive_time_ms", SERVER_KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", SERVER_KEEPALIVE_TIMEOUT_MS),
    ("grpc.http2.ping_timeout_ms", SERVER_KEEPALIVE_TIMEOUT_MS),  # what closes the connection in fact
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
