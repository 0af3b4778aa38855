"""Engines: self-contained machinery (ranking, embeddings, …) the kernel and the apps use.

An engine imports only Django, the standard library and third-party libraries — never an
app and never kernel app code.
"""
