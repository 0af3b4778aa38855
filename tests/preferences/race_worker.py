"""A separate process that races one ``remember`` against its siblings.

Usage: race_worker.py GO_FILE OPERATION_ID EXPECTED_REVISION STATEMENT
Waits until GO_FILE exists (so every process is booted before the race starts), then
commits and prints one JSON line: {"status": …} or {"error": code}.
"""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")

import django

django.setup()

from loopx_site.core.errors import DomainError  # noqa: E402
from preferences import services  # noqa: E402


def main() -> None:
    go_file, operation_id, expected, statement = sys.argv[1:5]
    deadline = time.monotonic() + 60
    while not os.path.exists(go_file) and time.monotonic() < deadline:
        time.sleep(0.002)
    try:
        receipt = services.remember(
            goal_id="demo",
            agent_id="author",
            key="review.collaboration",
            statement=statement,
            source_ref="owner-message-1",
            source_quote="Use the designated reviewer.",
            expected_revision=expected,
            operation_id=operation_id,
            execute=True,
        )
        print(json.dumps({"status": receipt["status"]}))
    except DomainError as exc:
        print(json.dumps({"error": exc.code}))


if __name__ == "__main__":
    main()
