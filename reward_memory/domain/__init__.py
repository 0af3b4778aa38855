"""Reward Memory's pure rules: no database, no Django models, no rendering.

Candidates and their guards, authority and URIs, input validation and parsing, the LoopX
mapping. Services and selectors apply them; adapters never call them directly.
"""
