"""What a user, the market or time does on the devnet, for tests and walkthroughs: a user's
ERC-20 deposit (minting the devnet token first if the sender lacks it), a collateral's price
feed moved (``set_feed_price``: a depeg) and moving time ahead.

Devnet only: these use anvil's impersonation and time controls, which no real chain has.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from eth_utils.address import to_checksum_address
from web3 import Web3
from web3.types import RPCEndpoint

_ERC20 = [
    {
        "name": "balanceOf",
        "type": "function",
        "stateMutability": "view",
        "inputs": [{"name": "holder", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    },
    {
        "name": "transfer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "amount", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    },
    {
        "name": "mint",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "amount", "type": "uint256"}],
        "outputs": [],
    },
]
_FEED = [
    {
        "name": name,
        "type": "function",
        "stateMutability": "view",
        "inputs": [],
        "outputs": [{"name": "", "type": kind}],
    }
    for name, kind in (("decimals", "uint8"), ("setter", "address"))
] + [
    {
        "name": "setAnswer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "answer", "type": "int256"}],
        "outputs": [],
    }
]
_GAS_MONEY = 10**18  # wei an impersonated sender gets if it has none


def _call(w3: Web3, method: str, params: list[Any]) -> Any:
    response = w3.provider.make_request(RPCEndpoint(method), params)
    if "error" in response:
        raise RuntimeError(f"{method}: {response['error']}")
    return response.get("result")


def deposit(url: str, token: str, sender: str, recipient: str, amount: int) -> dict[str, Any]:
    """``sender`` transfers ``amount`` of ``token`` to ``recipient``, minting what it lacks
    first; returns the transfer's ``tx_hash`` and ``block_number``."""
    w3 = Web3(Web3.HTTPProvider(url))
    sender, recipient = to_checksum_address(sender), to_checksum_address(recipient)
    erc20 = w3.eth.contract(address=to_checksum_address(token), abi=_ERC20)
    if w3.eth.get_balance(sender) == 0:
        _call(w3, "anvil_setBalance", [sender, hex(_GAS_MONEY)])
    _call(w3, "anvil_impersonateAccount", [sender])
    try:
        lacking = amount - erc20.functions.balanceOf(sender).call()
        if lacking > 0:
            minted = erc20.functions.mint(sender, lacking).transact({"from": sender})
            w3.eth.wait_for_transaction_receipt(minted)
        sent = erc20.functions.transfer(recipient, amount).transact({"from": sender})
        receipt = w3.eth.wait_for_transaction_receipt(sent)
    finally:
        _call(w3, "anvil_stopImpersonatingAccount", [sender])
    if receipt["status"] != 1:
        raise RuntimeError(f"the transfer {receipt['transactionHash'].to_0x_hex()} reverted")
    return {
        "tx_hash": receipt["transactionHash"].to_0x_hex(),
        "block_number": receipt["blockNumber"],
    }


def set_feed_price(url: str, feed: str, price: str) -> dict[str, Any]:
    """The devnet price feed at ``feed`` answers ``price`` (in its currency, e.g. "0.94"
    dollars) from now on, sent as its setter; returns the answer in the feed's units."""
    try:
        value = Decimal(price)
    except InvalidOperation:
        raise ValueError(f"price must be a number, got {price!r}") from None
    if not value.is_finite() or value < 0:
        raise ValueError(f"price must be a number at or above 0, got {price!r}")
    w3 = Web3(Web3.HTTPProvider(url))
    contract = w3.eth.contract(address=to_checksum_address(feed), abi=_FEED)
    decimals = int(contract.functions.decimals().call())
    answer = int(value.scaleb(decimals))
    setter = contract.functions.setter().call()
    _call(w3, "anvil_impersonateAccount", [setter])
    try:
        sent = contract.functions.setAnswer(answer).transact({"from": setter})
        receipt = w3.eth.wait_for_transaction_receipt(sent)
    finally:
        _call(w3, "anvil_stopImpersonatingAccount", [setter])
    if receipt["status"] != 1:
        raise RuntimeError(f"setting the feed {feed} reverted")
    return {"feed": to_checksum_address(feed), "answer": str(answer), "decimals": decimals}


def advance(url: str, seconds: int) -> int:
    """Moves the devnet's time ``seconds`` ahead and mines a block; returns its timestamp."""
    w3 = Web3(Web3.HTTPProvider(url))
    _call(w3, "evm_increaseTime", [seconds])
    _call(w3, "evm_mine", [])
    return int(w3.eth.get_block("latest")["timestamp"])
