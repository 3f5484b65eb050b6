"""Scheduling and malleability policies: pure functions of a cluster snapshot.

The live control service and the simulator run the very same classes.
"""
