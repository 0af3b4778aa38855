""" "probe now" agrees with itself (issue 34 item 1): the dashboard opens at its top (the
message in view, no anchor), the message uses the table's words ("not yet", never
"query:no" before a first recall), and the probed cell no longer reads "not probed"."""

from django.urls import reverse

from reward_memory.models import Corpus
from tests.frontdoor.test_dashboard import operator  # noqa: F401 - fixture


def _index_cell(html: str, corpus_id: str) -> str:
    row = html.split(f">{corpus_id}<", 1)[1].split("</tr>", 1)[0]
    cells = row.split("<td")
    return next(c for c in cells if "index present" in c)


def test_probe_now_message_and_table_say_the_same(demo, operator):  # noqa: F811
    corpus = Corpus.objects.get(corpus_id="loopx-demo-pr-description")
    before = operator.get("/admin/dashboard/").content.decode()
    assert "not probed" in _index_cell(before, corpus.corpus_id)
    response = operator.post(reverse("admin:reward_memory_corpus_probe", args=[corpus.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("loopx-dashboard")  # no #corpus-N anchor
    page = operator.get(response["Location"]).content.decode()
    message = page.split('class="messagelist">', 1)[1].split("</ul>", 1)[0]
    assert "index present: yes" in message
    assert "query:" not in message
    assert "not probed" not in _index_cell(page, corpus.corpus_id)
    assert ">yes<" in _index_cell(page, corpus.corpus_id)
