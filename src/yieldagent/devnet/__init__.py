"""The local EVM devnet: anvil, the project's own contracts and real protocol code."""
