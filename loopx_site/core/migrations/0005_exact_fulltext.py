"""Exact per-namespace BM25: namespace statistics, dense slots and packed posting blocks
replace the SQLite FTS5 table (whose statistics spanned every namespace) and the
PostgreSQL GIN index (``ts_rank_cd`` is not BM25). Existing documents are re-indexed."""

import django.db.models.deletion
from django.db import migrations, models

DROP = {
    "sqlite": [
        "DROP TRIGGER IF EXISTS core_searchdocument_fts_au",
        "DROP TRIGGER IF EXISTS core_searchdocument_fts_ad",
        "DROP TRIGGER IF EXISTS core_searchdocument_fts_ai",
        "DROP TABLE IF EXISTS core_searchdocument_fts",
    ],
    "postgresql": ["DROP INDEX IF EXISTS core_searchdocument_body_tsv_idx"],
}


def drop_old_structures(apps, schema_editor):
    for statement in DROP.get(schema_editor.connection.vendor, []):
        schema_editor.execute(statement)


def reindex(apps, schema_editor):
    SearchDocument = apps.get_model("core", "SearchDocument")
    if SearchDocument.objects.using(schema_editor.connection.alias).exists():
        from loopx_site.engines import fulltext

        fulltext.rebuild()


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0004_goal_operate_api_permission'),
    ]

    operations = [
        migrations.RunPython(drop_old_structures, migrations.RunPython.noop),
        migrations.CreateModel(
            name='SearchNamespace',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('documents', models.BigIntegerField(default=0, help_text='N: documents in the namespace.')),
                ('tokens', models.BigIntegerField(default=0, help_text="Sum of the documents' lengths.")),
                ('next_slot', models.BigIntegerField(default=0, help_text='Next dense document number.')),
            ],
        ),
        migrations.CreateModel(
            name='SearchPostingBlock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('term', models.CharField(max_length=64)),
                ('bucket', models.BigIntegerField()),
                ('count', models.IntegerField()),
                ('data', models.BinaryField()),
            ],
        ),
        migrations.RemoveField(
            model_name='searchdocument',
            name='namespace_key',
        ),
        migrations.AddField(
            model_name='searchdocument',
            name='length',
            field=models.IntegerField(default=0),
        ),
        migrations.AddField(
            model_name='searchdocument',
            name='slot',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddConstraint(
            model_name='searchnamespace',
            constraint=models.UniqueConstraint(fields=('name',), name='core_searchnamespace_name_uniq'),
        ),
        migrations.AddField(
            model_name='searchpostingblock',
            name='namespace',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.searchnamespace'),
        ),
        migrations.AddConstraint(
            model_name='searchpostingblock',
            constraint=models.UniqueConstraint(fields=('namespace', 'term', 'bucket'), name='core_searchpostingblock_ns_term_bucket_uniq'),
        ),
        migrations.RunPython(reindex, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='searchdocument',
            constraint=models.UniqueConstraint(fields=('namespace', 'slot'), name='core_searchdocument_namespace_slot_uniq'),
        ),
    ]
