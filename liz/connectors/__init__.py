"""Chat connectors: a platform's message becomes a turn of the chain; the reply leaves through a durable outbox."""
