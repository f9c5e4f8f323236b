"""Who may talk to a node, and what they may do: Kafka's security model over gRPC.

Transport (TLS and mTLS through grpcio's credentials), authentication (SASL
SCRAM and PLAIN over a SaslHandshake/SaslAuthenticate exchange that yields a
session credential carried in call metadata), principals (Kafka's
`User:name`, mapped from a certificate's subject by
`ssl.principal.mapping.rules`), and authorization (Kafka's ACL model, the
ACLs themselves living in the metadata log). The pure parts (ACL decisions,
mapping rules, SCRAM credential arithmetic) take no I/O; the gRPC glue is
kept in the modules that say so. docs/architecture.md, "Security", is the map.
"""
