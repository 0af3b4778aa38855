"""One API request against the leg's database, printed like a CLI call (for API steps).

    python -m tests.loopx_leg.api_call METHOD PATH [JSON_BODY]

Runs Django's test client in this process (no server), with a host token for Goal `leg`
/ Agent `author` (issued once per database, kept beside it). Prints the response body;
the exit status maps the HTTP status as the CLI's would: 2xx → 0, anything else → 2, so
the pair compares like two CLI calls.
"""

import os
import sys
from pathlib import Path


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
    import django

    django.setup()
    from django.test import Client

    from loopx_site.core import services

    method, path = sys.argv[1], sys.argv[2]
    body = sys.argv[3] if len(sys.argv) > 3 else None
    db = Path(os.environ["DATABASE_URL"].removeprefix("sqlite:///"))
    secret_file = db.with_suffix(".token")
    if not secret_file.exists():
        issued = services.create_token(goal_id="leg", agent_id="author", label="loopx leg")
        secret_file.write_text(issued.secret)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret_file.read_text()}", HTTP_HOST="localhost")
    call = getattr(client, method.lower())
    if body is None:
        response = call(f"/api/v1/{path}")
    else:
        response = call(f"/api/v1/{path}", data=body, content_type="application/json")
    sys.stdout.write(response.content.decode("utf-8"))
    return 0 if 200 <= response.status_code < 300 else 2


if __name__ == "__main__":
    sys.exit(main())
