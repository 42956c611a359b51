"""The web3 adapter's tests run on the session devnet (``support.web3_chain``)."""

from support.web3_chain import env

__all__ = ["env"]
