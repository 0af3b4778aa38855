"""The semantic preference recall hook (spec Part B), split by concern.

* ``errors``      — the ``semantic_preference`` error codes of the hook.
* ``config``      — ``semantic_preference_hook_config_v0`` loading and validation, the
                    git-ignore check, ``--context`` parsing.
* ``manifest``    — provider extension manifests (parsing, validation).
* ``doctor``      — the extension doctor (read-only probe of a manifest).
* ``binding``     — which provider a config binds to, and how it runs.
* the bounded subprocess runner shared by every provider path is ``loopx_site.core.sandbox``.
* ``protocol``    — request, response and ``corpus_inventory`` validation, guidance.
* ``receipts``    — stateless application and maintenance receipts.
* ``hook``        — ``recall`` and ``doctor``, the use cases tying them together.
* ``local_provider`` — the built-in ``loopx-local`` provider and its notes corpus.

Adapters import ``preferences.services`` (which re-exports the use cases), never these
modules directly.
"""
