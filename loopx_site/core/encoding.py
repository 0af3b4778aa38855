"""One JSON encoding for every document this service emits.

The CLI writes ``dumps(document)`` to stdout and the API's renderer
(``loopx_site.core.api.renderers.DocumentRenderer``) writes the same bytes as the
response body, so a host that switches between ``manage.py`` and HTTP reads the same
document byte for byte: UTF-8 without ``\\u`` escapes, compact separators, keys in the
order the documents module built them, and Django's encoder for dates, decimals and
UUIDs.
"""

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

SEPARATORS = (",", ":")


def dumps(document: Any) -> str:
    return json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, separators=SEPARATORS)
