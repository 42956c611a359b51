"""Smart accounts as the chain and storage know them: who provides one, the record of one,
and where records are kept. The rules that make and check accounts (their addresses, who
may use them) are ``domain.partners.smart_accounts``'."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Provider(StrEnum):
    """Who makes the account: the path segment of its endpoints."""

    ZERODEV = "zerodev"
    SAFE = "safe"


@dataclass(frozen=True, slots=True)
class SmartAccount:
    """A smart account recorded for a partner's user on one chain.

    ``fee_collector`` is the collector a Safe account is registered with at its set-up
    (part of its address); empty for a Kernel account.
    """

    chain_id: int
    eoa: str
    agent_id: str
    address: str
    partner_id: int
    provider: Provider = Provider.ZERODEV
    fee_collector: str = ""


class SmartAccountRepository(Protocol):
    """Where smart accounts are recorded."""

    def get(
        self, chain_id: int, eoa: str, agent_id: str, provider: Provider
    ) -> SmartAccount | None:
        """The recorded ``provider`` account for the key, if any."""

    def record(self, account: SmartAccount) -> SmartAccount:
        """Records ``account`` unless its key exists; returns the stored record."""
