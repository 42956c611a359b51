"""Money movements: activation and top-ups, withdrawals and deactivation, reward claims, and
the use cases composed (``lifecycle``)."""
