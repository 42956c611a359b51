"""Risk guards: named rules that keep wallets out of failing pools and keep the service
from owning too much of one.

Pure: a guard reads what the chain read of a pool (``market.readings.PoolReading``, with
a small bounded history of earlier readings) and the service's own position there, and
says whether the pool may take new funds or must be left (``guards.assess``). What a guard
allows one wallet to hold in a pool (the pool share and pool size caps) is
``limits.wallet_cap``; ``limits.guarded`` turns the verdicts into the optimizer's
constraints, so every allocation the optimizer makes respects them.

rule               trips when                                           state
pool_share         the service would own more than 15% of a pool        no new funds beyond
pool_size          a pool's TVL is under 10× a wallet's position        cut to fit
tvl_drop           TVL fell more than 50% within 24 hours               exit
paused             supply paused or reserve frozen                      exit
                   withdrawals paused                                   no new funds; exit
                                                                        once they reopen
utilisation        utilisation ≥ 95% for longer than an hour            no new funds
liquidity          free liquidity < 5% of the service's position        exit, as cash frees
loss               the pool's share price fell (bad debt realised)      exit; excluded until
                                                                        an operator clears it
depeg              a collateral's feed 5% or more below its peg         exit
move_loss          a move would lose more than 1 bp of its amount       the move is refused
min_wait           a yield-only move within 6 h of the wallet's last    the move waits
"""
