"""Reward Memory's documents, rendered once for the CLI, the API and the admin.

Services and selectors hold the rules; the modules of this package build the wire
documents from their results (one module per area: ``records``, ``corpora``,
``authority``, ``review``, ``ingest``, ``reflection``, ``experiments``, ``hooks``,
``operator_control``, ``activation``, ``demo``), so the same operation is the same
document wherever it is asked for.
"""
