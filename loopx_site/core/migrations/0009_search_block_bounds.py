"""Posting blocks carry the bounds of their postings (largest tf, smallest dl), which a
search reads to skip the posting lists that cannot reach the top-k; existing blocks get
them computed from their own data."""

import sys
from array import array

from django.db import migrations, models

_BATCH = 2000


def fill_bounds(apps, schema_editor):
    connection = schema_editor.connection
    last = 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT id, data FROM core_searchpostingblock WHERE id > %s ORDER BY id LIMIT %s",
                [last, _BATCH],
            )
            rows = cursor.fetchall()
            if not rows:
                return
            updates = []
            for block_id, data in rows:
                packed = array("I")
                packed.frombytes(bytes(data))
                if sys.byteorder == "big":
                    packed.byteswap()
                if packed:
                    updates.append([max(packed[1::3]), min(packed[2::3]), block_id])
            cursor.executemany(
                "UPDATE core_searchpostingblock SET max_tf = %s, min_dl = %s WHERE id = %s",
                updates,
            )
            last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0008_celery_background_run"),
    ]

    operations = [
        migrations.AddField(
            model_name="searchpostingblock",
            name="max_tf",
            field=models.IntegerField(default=0, help_text="Largest term frequency in the block."),
        ),
        migrations.AddField(
            model_name="searchpostingblock",
            name="min_dl",
            field=models.IntegerField(
                default=0, help_text="Smallest document length in the block."
            ),
        ),
        migrations.AddIndex(
            model_name="searchpostingblock",
            index=models.Index(
                fields=["namespace", "term", "count", "max_tf", "min_dl"],
                name="core_searchpostingblock_bounds",
            ),
        ),
        migrations.RunPython(fill_bounds, migrations.RunPython.noop),
    ]
