"""The ports of the outside world's vocabulary and the shared kernel: what the domain asks
of a chain, of time and of the operator's signer, and where leases, the agent's schedule,
idempotency keys, smart accounts and partners' credentials are kept. A port that carries a
higher package's values is declared in that package (``books.ports``, ``market.ports``,
``agent.ports``)."""
