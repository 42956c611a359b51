"""The local EVM devnet: anvil running real protocol code (``make devnet``).

``toolchain`` compiles and finds contracts, ``anvil`` runs the node, ``deployer`` sends
transactions, ``usdc`` / ``aave`` (and the protocol modules beside them) deploy, ``deploy``
puts it all together into a ``manifest``, and ``run`` is ``python -m yieldagent.devnet``.
"""
