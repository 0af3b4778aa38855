"""Behind PgBouncer in transaction pooling (docs/topology.md), LOOPX_PG_PREPARED_STATEMENTS
=false turns psycopg's statement preparation off and Django's named server-side cursors
off; by default both stay on."""

import json
import os
import subprocess
import sys

from tests.helpers import ROOT

PROBE = (
    "import json, django; django.setup(); from django.conf import settings; "
    "d = settings.DATABASES['default']; "
    "print(json.dumps({'options': d.get('OPTIONS', {}), "
    "'no_cursors': d.get('DISABLE_SERVER_SIDE_CURSORS', False)}))"
)


def _database_settings(**env) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "DJANGO_SETTINGS_MODULE": "loopx_site.settings",
            "DATABASE_URL": "postgres://u@127.0.0.1:6432/loopx",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_prepared_statements_off_disables_preparing_and_server_side_cursors():
    found = _database_settings(LOOPX_PG_PREPARED_STATEMENTS="false")
    assert found["options"].get("prepare_threshold", "unset") is None
    assert "server_side_binding" not in found["options"]
    assert found["no_cursors"] is True


def test_postgres_default_keeps_server_side_binding_and_cursors():
    found = _database_settings()
    assert found["options"] == {"server_side_binding": True, "prepare_threshold": 5}
    assert found["no_cursors"] is False
