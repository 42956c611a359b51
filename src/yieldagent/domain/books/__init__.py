"""The books: wallets and their states, the ledger written from chain events, operations and
their reconciliation, leases, events and chain totals, and what partners read of them."""
