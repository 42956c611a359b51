"""The web3.py adapter of the chain port: any EVM chain through its JSON-RPC node."""
