"""The preferences app's rendering layer: every document it emits is built here.

* ``journal``    — the explicit Agent preference journal (``semantic_preference_agent_v1``,
                   ``agent_preferences_v1``, ``agent_preference_changed_v1``) and the
                   turn-start projection; its renderers are re-exported here, so adapters
                   write ``documents.read`` / ``documents.respond(...)``.
* ``recall``     — the recall hook: ``recall``, ``doctor``, receipts, config
                   registrations, the built-in provider's notes and reindex.
* ``extensions`` — provider extensions: the stored manifest, the extension doctor,
                   lifecycle operations, the listing and the public projection of a row.

What a provider subprocess sends and receives (request, response, guidance) is the
contract module ``preferences.recall.protocol``. Services and selectors return plain data;
views and commands call one service and render its result with one builder here.
"""

from preferences.documents.journal import (  # noqa: F401
    CURRENT_SCHEMA,
    EVENT_SCHEMA,
    INSTRUCTIONS,
    SCHEMA,
    current,
    history,
    migration,
    observe,
    read,
    respond,
    write,
)
