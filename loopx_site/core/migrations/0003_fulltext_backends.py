"""Backend-specific full-text structures for ``core_searchdocument``.

SQLite: an external-content FTS5 table kept in step by triggers.
PostgreSQL: a GIN index over ``to_tsvector('simple', body)``.
"""

from django.db import migrations

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE core_searchdocument_fts USING fts5("
    "namespace_key, body, content='core_searchdocument', content_rowid='id')",
    "CREATE TRIGGER core_searchdocument_fts_ai AFTER INSERT ON core_searchdocument BEGIN "
    "INSERT INTO core_searchdocument_fts(rowid, namespace_key, body) "
    "VALUES (new.id, new.namespace_key, new.body); END",
    "CREATE TRIGGER core_searchdocument_fts_ad AFTER DELETE ON core_searchdocument BEGIN "
    "INSERT INTO core_searchdocument_fts(core_searchdocument_fts, rowid, namespace_key, body) "
    "VALUES ('delete', old.id, old.namespace_key, old.body); END",
    "CREATE TRIGGER core_searchdocument_fts_au AFTER UPDATE ON core_searchdocument BEGIN "
    "INSERT INTO core_searchdocument_fts(core_searchdocument_fts, rowid, namespace_key, body) "
    "VALUES ('delete', old.id, old.namespace_key, old.body); "
    "INSERT INTO core_searchdocument_fts(rowid, namespace_key, body) "
    "VALUES (new.id, new.namespace_key, new.body); END",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS core_searchdocument_fts_au",
    "DROP TRIGGER IF EXISTS core_searchdocument_fts_ad",
    "DROP TRIGGER IF EXISTS core_searchdocument_fts_ai",
    "DROP TABLE IF EXISTS core_searchdocument_fts",
]
POSTGRES_FORWARD = [
    "CREATE INDEX core_searchdocument_body_tsv_idx ON core_searchdocument "
    "USING gin (to_tsvector('simple', body))",
]
POSTGRES_BACKWARD = ["DROP INDEX IF EXISTS core_searchdocument_body_tsv_idx"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("core", "0002_searchdocument")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
