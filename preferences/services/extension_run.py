"""``extension run ID --input-json FILE|- [--execute]``: LoopX's verb for standalone
extensions, answered as LoopX answers it for the extensions this service installs.

Every extension here is a capability provider (``semantic-preference``), and LoopX 2.1.1
refuses ``extension run`` for a capability provider ("invoke capability providers through
their capability or domain command"). So this verb runs nothing: it checks what LoopX
checks, in LoopX's order — the input is one readable JSON object, the id is installed,
the extension is enabled — and then refuses with ``extension_not_standalone``
(``loopx_extension_error_v0``, exit 2). A provider runs only through ``recall`` with a
verified config.
"""

import json
import sys
from typing import Any

from preferences.models import ProviderExtension
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.services.extensions import _extension_errors, _extension_id_argument

#: The largest request file read (a provider request is a few KiB).
MAX_INPUT_BYTES = 1 << 20


def _request(input_json: str) -> dict[str, Any]:
    try:
        if input_json == "-":
            text = sys.stdin.read(MAX_INPUT_BYTES + 1)
        else:
            with open(input_json, encoding="utf-8") as handle:
                text = handle.read(MAX_INPUT_BYTES + 1)
        if len(text) > MAX_INPUT_BYTES:
            raise ValueError("too large")
        value = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError):
        raise invalid(
            "invalid_input",
            "input_json",
            "extension run input must be a readable JSON object.",
        ) from None
    if not isinstance(value, dict):
        raise invalid("invalid_input", "input_json", "extension run input must be a JSON object.")
    return value


@_extension_errors
def run_extension(*, extension_id: str, input_json: str, execute: bool = False) -> dict[str, Any]:
    """Refuse as LoopX does: only standalone extensions run, and none is installed here."""
    _request(input_json)
    _extension_id_argument(extension_id)
    row = ProviderExtension.objects.filter(extension_id=extension_id).first()
    if row is None:
        raise SemanticPreferenceError(
            "extension_not_found", "No installed extension has this id.", field="extension_id"
        )
    if not row.active:
        raise invalid("extension_disabled", "extension_id", "This extension is disabled.")
    raise invalid(
        "extension_not_standalone",
        "extension_id",
        f"extension run only accepts standalone extensions; {extension_id} is a "
        f"{row.capability} provider: use `semantic_preference recall`.",
    )
