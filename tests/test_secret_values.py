"""A secret stays out of repr and str, and children get none of our settings."""

from __future__ import annotations

from yieldagent.secret_values import Secret, child_environment


def test_a_secret_shows_only_stars() -> None:
    secret = Secret("hunter2")
    assert secret.reveal() == "hunter2"
    assert "hunter2" not in repr(secret) + str(secret) + f"{secret}" + repr([secret])
    assert secret == Secret("hunter2")


def test_children_get_the_environment_without_any_setting() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/op",
        "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x" + "5e" * 32,
        "YIELDAGENT_OPERATOR_KEY_PASSWORD": "hunter2",
        "YIELDAGENT_DATABASE_URL": "postgresql://app:hunter2@db/app",
        "YIELDAGENT_RPC_URL_8453": "https://base.example/v2/api-key",
    }
    assert child_environment(env) == {"PATH": "/usr/bin", "HOME": "/home/op"}
