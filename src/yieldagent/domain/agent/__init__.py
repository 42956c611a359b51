"""The agent: the plan of one run, one wallet's run, the schedule that runs every due wallet,
and a batch's moves executed together."""
