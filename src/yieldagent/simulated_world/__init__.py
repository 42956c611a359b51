"""The simulated world's state, and the port where the simulator and its store meet.

The simulated chain (``chain.simulated``) keeps its world in the service's database
(``storage.simulation``). Neither adapter imports the other: both speak the values of
``state`` and ``clock``, the store implements ``store.WorldStore``, and the composition root
hands one to the simulator. The domain needs none of it.
"""
