"""A separate process writing one scope's journal step by step (``test_write_path``).

Reads one JSON line per step from stdin — ``{"kind": "remember"|"retire", "now": ISO,
"args": {…}}`` — runs it at that time through the service and its document, and prints
one JSON line: ``{"document": <the document or error envelope, as the CLI encodes it>,
"decodes": <full decodes of a snapshot's items so far>}``. An empty line ends it.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")

import django

django.setup()

from django.db import connection  # noqa: E402

from tests.preferences.test_write_path import CountingDecode, run_step  # noqa: E402


def main() -> None:
    decodes = CountingDecode.install()
    assert not connection.queries_logged  # the commit takes the SQLite fast path
    for line in sys.stdin:
        if not line.strip():
            break
        document = run_step(json.loads(line))
        print(json.dumps({"document": document, "decodes": decodes.calls}), flush=True)
    connection.close()


if __name__ == "__main__":
    main()
