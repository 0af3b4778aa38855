"""The preferences app's pure rules: no database, no Django models, no rendering.

``journal``: the explicit journal's capacity limits, its stored item and that item's
encoding, expiry, LoopX's key order, the current state a read answers and the turn-start
projection of it. Services and selectors apply them; adapters never call them directly.
"""
