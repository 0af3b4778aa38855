"""Lists an operator can read at 1280 px: short refs with the whole ref on hover, and
no navigation sidebar taking the width."""

from hooks.models import HookIntent
from loopx_site.core.admin_base import short_ref


def test_short_ref_keeps_the_prefix_and_puts_the_whole_ref_on_hover():
    ref = "pwi_" + "a" * 64
    html = short_ref(ref)
    assert f'title="{ref}"' in html
    assert ">pwi_aaaaaaaaaaaa…<" in html
    assert short_ref("short-id") == "short-id"
    assert short_ref(None) == "—"


def test_intent_list_shows_short_refs_and_no_nav_sidebar(demo, admin_client):
    intent = HookIntent.objects.first()
    page = admin_client.get("/admin/hooks/hookintent/").content.decode()
    assert f'title="{intent.intent_id}"' in page
    assert f">{intent.intent_id[:16]}…<" in page
    assert 'id="nav-sidebar"' not in page


def test_record_list_shows_short_ref_corpus_class_state_and_a_summary_excerpt(demo, admin_client):
    from reward_memory.models import MemoryRecord

    record = MemoryRecord.objects.filter(summary__startswith="Keep PR descriptions").get()
    page = admin_client.get("/admin/reward_memory/memoryrecord/").content.decode()
    assert f'title="{record.record_ref}"' in page
    assert record.corpus.corpus_id in page
    assert "Keep PR descriptions under twenty lines" in page
    found = admin_client.get("/admin/reward_memory/memoryrecord/", {"q": "twenty lines"})
    assert [r.pk for r in found.context["cl"].result_list] == [record.pk]
