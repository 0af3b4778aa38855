"""The index's analyzer now drops English stop words and stems (``bm25.ENGLISH``): the
stored postings of existing documents are rebuilt with it."""

from django.db import migrations


def reindex(apps, schema_editor):
    SearchDocument = apps.get_model("core", "SearchDocument")
    if SearchDocument.objects.using(schema_editor.connection.alias).exists():
        from loopx_site.engines import fulltext

        fulltext.rebuild()


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0006_edge_throttle_counter"),
    ]

    operations = [migrations.RunPython(reindex, migrations.RunPython.noop)]
