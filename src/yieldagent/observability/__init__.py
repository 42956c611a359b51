"""Observability: Prometheus metrics, JSON logs with request ids, and the agent's run counts."""
