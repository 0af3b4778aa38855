"""This service as a *remote* semantic preference provider.

A LoopX host installs ``preferences/extensions/loopx-memory-remote.toml``; its entrypoint
(``bin/loopx-memory-provider remote``) forwards each ``semantic_preference_provider_
request_v0`` it reads on stdin to ``POST /api/v1/semantic-preferences/provider/`` with the
host token from the environment the manifest declares. The server answers from the
built-in ranking (``local_provider``) over the project of the registered config the token
may run — the project and the scope come from that operator-managed row and the token,
never from the request (which has no project).
"""

import json
from typing import Any

from preferences.recall import local_provider
from preferences.recall.errors import SemanticPreferenceError


def answer(row, request: Any) -> dict[str, Any]:
    """One ``semantic_preference_provider_response_v0`` for ``request`` over ``row``'s
    project (``invalid_argument`` if the request breaks the provider protocol)."""
    data = json.dumps(request, ensure_ascii=False).encode("utf-8")
    return local_provider.recall_response(**local_provider.parse_request(data, project=row.project))


def health(row) -> dict[str, Any]:
    """The provider's read-only health report for ``row``'s project
    (``provider_unhealthy`` when the index disagrees with the project's notes)."""
    report = local_provider.doctor_report(project=row.project)
    if not report["healthy"]:
        raise SemanticPreferenceError(
            "provider_unhealthy",
            "The provider index disagrees with the project's notes; an operator reindexes it.",
        )
    return report
