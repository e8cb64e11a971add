"""Slow, obviously-correct scalar implementations used as test oracles.

Written to read like the spec's pseudo-code (bit by bit, VMA by VMA, event by event); the
vectorised modules are tested against them.
"""
