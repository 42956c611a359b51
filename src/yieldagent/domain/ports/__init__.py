"""Every port the domain and its adapters use: what they ask of a chain, of storage and of
time, who signs for the operator, and whom the domain tells how runs ended."""
