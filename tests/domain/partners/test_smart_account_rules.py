"""Smart account requests: checking their fields, and opening and finding accounts."""

from __future__ import annotations

from dataclasses import replace

import pytest
from eth_utils.address import to_checksum_address
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.errors import AccessDenied, ChainUnavailable, InvalidInput, NotFound
from yieldagent.domain.partners.safe_accounts import (
    COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
    SAFE_L2_1_4_1,
    SAFE_PROXY_FACTORY_1_4_1,
    SafeAccountConstants,
    safe_account_address,
)
from yieldagent.domain.partners.smart_accounts import (
    DEFAULT_AGENT_ID,
    MAX_AGENT_ID_LENGTH,
    AccountKey,
    SafeChains,
    account_key,
    check_owner,
    find_account,
    open_account,
    smart_account_address,
)
from yieldagent.domain.ports.accounts import Provider, SmartAccount, SmartAccountRepository

OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
CHAINS = frozenset({1, 8453})
ADDRESS_MSG = "value is not a valid Ethereum address (0x followed by 40 hex characters)"


class FakeRepository:
    """Smart accounts in a dict, keyed like the real table's unique constraint."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, str, str, Provider], SmartAccount] = {}
        self.records = 0

    def get(
        self, chain_id: int, eoa: str, agent_id: str, provider: Provider = Provider.ZERODEV
    ) -> SmartAccount | None:
        return self.rows.get((chain_id, eoa, agent_id, provider))

    def record(self, account: SmartAccount) -> SmartAccount:
        self.records += 1
        key = (account.chain_id, account.eoa, account.agent_id, account.provider)
        return self.rows.setdefault(key, account)


def _repository() -> SmartAccountRepository:
    return FakeRepository()


# account_key


def test_a_valid_request_gives_its_key() -> None:
    assert account_key(OWNER, 8453, "bot", CHAINS) == AccountKey(8453, OWNER, "bot")


@pytest.mark.parametrize("eoa", [OWNER.lower(), "0x" + OWNER[2:].upper(), OWNER])
def test_the_eoa_is_checksummed(eoa: str) -> None:
    assert account_key(eoa, 1, "bot", CHAINS).eoa == OWNER


@given(raw=st.binary(min_size=20, max_size=20))
def test_any_hex_eoa_is_checksummed(raw: bytes) -> None:
    key = account_key("0x" + raw.hex(), 1, "bot", CHAINS)
    assert key.eoa == to_checksum_address(raw)


def test_an_empty_agent_id_means_the_default_agent() -> None:
    assert account_key(OWNER, 1, "", CHAINS).agent_id == DEFAULT_AGENT_ID == "yield-agent"


def test_every_violation_is_reported_at_once() -> None:
    with pytest.raises(InvalidInput) as caught:
        account_key("0x123", 999, "bot", CHAINS)
    violations = caught.value.violations
    assert [v.loc for v in violations] == [("eoa",), ("chain",)]
    assert [v.type for v in violations] == ["value_error.address", "literal_error"]
    assert violations[0].msg == ADDRESS_MSG
    assert violations[1].msg == "Input should be one of 1, 8453"


def test_an_empty_eoa_is_missing() -> None:
    with pytest.raises(InvalidInput) as caught:
        account_key("", 1, "bot", CHAINS)
    (violation,) = caught.value.violations
    assert (violation.loc, violation.type, violation.msg) == (("eoa",), "missing", "Field required")


def test_all_three_fields_can_be_wrong_together() -> None:
    with pytest.raises(InvalidInput) as caught:
        account_key("", 0, "x" * (MAX_AGENT_ID_LENGTH + 1), CHAINS)
    assert [v.loc for v in caught.value.violations] == [("eoa",), ("chain",), ("agent_id",)]


@pytest.mark.parametrize(
    "agent_id",
    [
        pytest.param("x" * (MAX_AGENT_ID_LENGTH + 1), id="too long"),
        pytest.param("bot\n", id="newline"),
        pytest.param("b\x00t", id="NUL"),
    ],
)
def test_bad_agent_ids_are_refused(agent_id: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        account_key(OWNER, 1, agent_id, CHAINS)
    assert [v.loc for v in caught.value.violations] == [("agent_id",)]


def test_the_longest_agent_id_is_accepted() -> None:
    agent_id = "x" * MAX_AGENT_ID_LENGTH
    assert account_key(OWNER, 1, agent_id, CHAINS).agent_id == agent_id


@given(chain=st.integers().filter(lambda c: c not in CHAINS))
def test_an_unsupported_chain_is_refused(chain: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        account_key(OWNER, chain, "", CHAINS)
    assert [v.loc for v in caught.value.violations] == [("chain",)]


# open_account, find_account, check_owner


def test_open_records_the_sdk_address() -> None:
    repository = _repository()
    key = account_key(OWNER, 8453, "", CHAINS)
    account = open_account(repository, key, partner_id=1)
    assert account == SmartAccount(8453, OWNER, DEFAULT_AGENT_ID, smart_account_address(OWNER), 1)
    assert repository.get(8453, OWNER, DEFAULT_AGENT_ID, Provider.ZERODEV) == account


def test_open_is_idempotent() -> None:
    repository = FakeRepository()
    key = account_key(OWNER, 8453, "bot", CHAINS)
    first = open_account(repository, key, 1)
    assert open_account(repository, key, 1) == first
    assert repository.records == 1
    assert len(repository.rows) == 1


def test_the_address_depends_on_the_agent_but_not_the_chain() -> None:
    repository = _repository()
    on_base = open_account(repository, account_key(OWNER, 8453, "bot", CHAINS), 1)
    on_mainnet = open_account(repository, account_key(OWNER, 1, "bot", CHAINS), 1)
    other_agent = open_account(repository, account_key(OWNER, 1, "other", CHAINS), 1)
    assert on_base.address == on_mainnet.address == smart_account_address(OWNER, "bot")
    assert other_agent.address == smart_account_address(OWNER, "other") != on_base.address


def test_another_partner_cannot_open_the_same_account() -> None:
    repository = _repository()
    key = account_key(OWNER, 8453, "bot", CHAINS)
    open_account(repository, key, 1)
    with pytest.raises(AccessDenied, match="another partner"):
        open_account(repository, key, 2)
    stored = repository.get(8453, OWNER, "bot", Provider.ZERODEV)
    assert stored is not None and stored.partner_id == 1


def test_another_partner_can_use_an_agent_id_of_its_own() -> None:
    repository = _repository()
    open_account(repository, account_key(OWNER, 8453, "bot", CHAINS), 1)
    theirs = open_account(repository, account_key(OWNER, 8453, "their-bot", CHAINS), 2)
    assert theirs.partner_id == 2


def test_find_before_open_is_not_found() -> None:
    key = account_key(OWNER, 8453, "", CHAINS)
    with pytest.raises(NotFound) as caught:
        find_account(_repository(), key, 1)
    assert caught.value.detail == (
        f"No smart account for {OWNER} with agent id 'yield-agent' on chain 8453"
    )


def test_find_after_open_returns_the_account() -> None:
    repository = _repository()
    key = account_key(OWNER.lower(), 8453, "", CHAINS)
    opened = open_account(repository, key, 1)
    assert find_account(repository, key, 1) == opened


def test_find_for_another_partner_is_denied() -> None:
    repository = _repository()
    key = account_key(OWNER, 8453, "", CHAINS)
    open_account(repository, key, 1)
    with pytest.raises(AccessDenied):
        find_account(repository, key, 2)


def test_check_owner() -> None:
    account = SmartAccount(1, OWNER, "bot", smart_account_address(OWNER, "bot"), 5)
    assert check_owner(account, 5) is account
    with pytest.raises(AccessDenied, match="use another agent_id"):
        check_owner(account, 6)


def test_open_returns_what_the_repository_kept_when_it_lost_a_race() -> None:
    # Another replica recorded the key between our get() and record().
    class RacingRepository(FakeRepository):
        def get(
            self, chain_id: int, eoa: str, agent_id: str, provider: Provider = Provider.ZERODEV
        ) -> SmartAccount | None:
            return None

    repository = RacingRepository()
    winner = SmartAccount(1, OWNER, "bot", smart_account_address(OWNER, "bot"), 9)
    repository.rows[(1, OWNER, "bot", Provider.ZERODEV)] = winner
    key = account_key(OWNER, 1, "bot", CHAINS)
    with pytest.raises(AccessDenied):
        open_account(repository, key, 1)
    assert open_account(repository, key, 9) == winner


# Safe accounts

COLLECTOR = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"
BASE_SAFE = SafeAccountConstants(
    chain_id=8453,
    factory=SAFE_PROXY_FACTORY_1_4_1,
    singleton=SAFE_L2_1_4_1,
    fallback_handler=COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
    module_setup="0x725308040b4D93A52534154de2a655e172B7A373",
    module="0x8E58092bfCB6a88B7BE89ADCeCF0CE3065ccDeF8",
    token="0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    fee_collector=COLLECTOR,
)
SAFES = SafeChains({8453: BASE_SAFE}, {1: "YIELDAGENT_FEE_COLLECTOR is not set"})


def test_a_safe_account_is_recorded_at_the_formulas_address_with_its_collector() -> None:
    repository = _repository()
    key = account_key(OWNER, 8453, "bot", CHAINS)
    account = open_account(repository, key, 1, Provider.SAFE, SAFES)
    assert account.address == safe_account_address(OWNER, "bot", BASE_SAFE)
    assert (account.provider, account.fee_collector) == (Provider.SAFE, COLLECTOR)
    assert find_account(repository, key, 1, Provider.SAFE) == account
    with pytest.raises(NotFound, match="No smart account"):
        find_account(repository, key, 1)  # the Kernel account of the same key is another one
    kernel = open_account(repository, key, 1)
    assert kernel.address != account.address and kernel.fee_collector == ""


def test_a_recorded_safe_account_keeps_its_address_when_the_constants_change() -> None:
    repository = _repository()
    key = account_key(OWNER, 8453, "bot", CHAINS)
    first = open_account(repository, key, 1, Provider.SAFE, SAFES)
    moved = SafeChains({8453: replace(BASE_SAFE, fee_collector=OWNER)})
    assert open_account(repository, key, 1, Provider.SAFE, moved) == first


def test_a_chain_refused_for_safe_accounts_says_why_and_records_nothing() -> None:
    repository = FakeRepository()
    with pytest.raises(ChainUnavailable, match="chain 1: YIELDAGENT_FEE_COLLECTOR is not set"):
        open_account(repository, account_key(OWNER, 1, "bot", CHAINS), 1, Provider.SAFE, SAFES)
    with pytest.raises(ChainUnavailable, match="not deployed there"):
        SafeChains().on(8453)
    assert repository.records == 0
