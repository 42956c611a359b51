"""Adapters of the signer port (``domain.ports.signer``): who signs for the operator."""
