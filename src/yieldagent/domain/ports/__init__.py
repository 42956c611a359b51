"""Every port the domain uses: what it asks of a chain, of storage and of time, and whom it
tells how runs ended."""
