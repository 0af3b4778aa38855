"""Posting blocks of 6 bytes a posting (0010) take 4: the slot is stored as its offset in
the block's bucket (``BUCKET`` slots: two bytes), beside a byte each for tf and length
(``loopx_site.engines.fulltext._encode``). Blocks with a tf or length above 255 stay in
their 12 bytes; a block's size per posting tells its format, and search results are the
same whatever it is.

On PostgreSQL the table's ``toast_tuple_target`` becomes 8160 (its largest): a block of
up to about 8 KB — every 4-byte block of 2048 slots — is kept in its row, not moved to
the TOAST table. A search reads whole posting lists, and a value kept in line is read
without one TOAST index lookup and chunk reassembly per block (measured: a 454k-posting
list in 4.1 ms in line, 4.8 ms out of line). It applies to rows written from now on —
the blocks rewritten below included."""

import struct

from django.db import migrations

_BATCH = 2000
_BUCKET = 2048  # loopx_site.engines.fulltext.BUCKET when this was written


def keep_blocks_in_line(apps, schema_editor):
    _set_target(schema_editor, "SET (toast_tuple_target = 8160)")


def move_blocks_out_of_line(apps, schema_editor):
    _set_target(schema_editor, "RESET (toast_tuple_target)")


def _set_target(schema_editor, clause: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE core_searchpostingblock {clause}")


def compact_blocks(apps, schema_editor):
    _rewrite(schema_editor.connection, _compact)


def narrow_blocks(apps, schema_editor):  # back to the format 0010's code reads
    _rewrite(schema_editor.connection, _narrow)


def _compact(bucket: int, count: int, data: bytes) -> bytes | None:
    if len(data) != 6 * count:  # compact already, or wide
        return None
    flat = list(struct.unpack("<" + "IBB" * count, data))
    base = bucket * _BUCKET
    flat[0::3] = [slot - base for slot in flat[0::3]]
    return struct.pack("<" + "HBB" * count, *flat)


def _narrow(bucket: int, count: int, data: bytes) -> bytes | None:
    if len(data) != 4 * count:
        return None
    flat = list(struct.unpack("<" + "HBB" * count, data))
    base = bucket * _BUCKET
    flat[0::3] = [offset + base for offset in flat[0::3]]
    return struct.pack("<" + "IBB" * count, *flat)


def _rewrite(connection, convert) -> None:
    last = 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT id, bucket, count, data FROM core_searchpostingblock WHERE id > %s "
                "ORDER BY id LIMIT %s",
                [last, _BATCH],
            )
            rows = cursor.fetchall()
            if not rows:
                return
            updates = []
            for block_id, bucket, count, data in rows:
                converted = convert(bucket, count, bytes(data))
                if converted is not None:
                    updates.append([converted, block_id])
            cursor.executemany(
                "UPDATE core_searchpostingblock SET data = %s WHERE id = %s", updates
            )
            last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0010_narrow_posting_blocks"),
    ]

    operations = [
        migrations.RunPython(keep_blocks_in_line, move_blocks_out_of_line),
        migrations.RunPython(compact_blocks, narrow_blocks, elidable=True),
    ]
