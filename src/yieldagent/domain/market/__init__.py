"""The market: what pools pay and how they stand. Rate models, pool quotes and a pool's
rate and yield curves after our own change of position; the readings the risk guards
judge a pool on and its bounded history. The books value wallets with it, the optimizer
and the guards plan on it, and it imports none of them."""
