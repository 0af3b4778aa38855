"""The operator's day, workflow by workflow, in a real browser (``browser.py``: every
page is saved as a screenshot, fails on a console error and is audited by axe-core):
retire a record; operator edit → review queue → accept → apply → readback; the live
scope marked after a state_ref move; the dashboard legend and "probe now". (Granting and
revoking a checkpoint is in ``test_browser.py``.) The demo is loaded as ``make run``
loads it, so the signed-in operator owns, reviews and retires the demo corpora."""

from loopx_site.core import services as core_services
from preferences import services as preference_services
from reward_memory.models import MemoryRecord, OperatorControl
from tests.frontdoor.browser import BrowserTestCase

RECORDS = "/admin/reward_memory/memoryrecord/"
QUEUE = "/admin/reward_memory/reviewqueueitem/"


class OperatorWorkflowsInBrowserTests(BrowserTestCase):
    prefix = "wf-"

    def _active(self, corpus_id: str) -> MemoryRecord:
        return MemoryRecord.objects.filter(
            corpus__corpus_id=corpus_id, lifecycle_state="active"
        ).first()

    def test_retire_a_record_and_see_the_readback(self):
        self.log_in()
        record = self._active("loopx-demo-pr-description")
        self.open(RECORDS)
        self.shot("records")
        message = self.act("retire", record.pk)
        assert f"{record.record_ref}: retired; read back: retired, no longer recallable" in (
            message
        ), message
        self.shot("record-retired")
        record.refresh_from_db()
        assert record.lifecycle_state == "retired"

    def test_operator_edit_is_reviewed_and_applied_in_the_review_queue(self):
        self.log_in()
        record = self._active("loopx-demo-turn-admission")
        edited = "Before a new Todo, re-read its acceptance criteria and last validation."
        self.open(RECORDS)
        message = self.act(
            "operator_edit",
            record.pk,
            control_ref="demo-operator-control",
            reasoning_summary="Tighter wording.",
            edited_content_summary=edited,
        )
        assert "replacement candidate recorded" in message, message
        self.shot("operator-edit")
        self.by_css("ul.messagelist li a").click()  # the message links the queue item
        assert QUEUE in self.browser.current_url
        assert edited in self.by_css("#result_list").text
        self.shot("review-queue")
        item = OperatorControl.objects.get(action="edit")
        message = self.act("accept", item.pk)
        assert "accept recorded as review rmrv_" in message, message
        self.shot("review-accepted")
        message = self.act("apply", item.pk)
        assert "activated as record rmr_" in message, message
        assert "exact readback verified" in message
        self.shot("replacement-applied")
        assert MemoryRecord.objects.get(summary=edited).lifecycle_state == "active"

    def test_the_live_scope_is_marked_after_a_state_ref_move(self):
        core_services.register_goal(
            goal_id="demo",
            agent_ids=["author", "reviewer"],
            state_ref="goals/demo/state-v2.json",
            execute=True,
        )
        preference_services.migrate_scope(
            goal_id="demo", agent_id="author", operation_id="browser-move", execute=True
        )
        self.log_in()
        self.open("/admin/preferences/preferencescope/?live=yes")
        listed = self.by_css("#result_list").text
        assert "goals/demo/state-v2.json" in listed
        self.shot("live-scopes")
        self.open("/admin/preferences/preferencescope/?live=no")
        assert "goals/demo/state-v2.json" not in self.by_css("#result_list").text
        self.shot("earlier-scopes")
        self.open("/admin/dashboard/")
        assert "live" in self.by_css("#goal-demo tr.lx-live").text
        assert "earlier scopes (1)" in self.by_css("#goal-demo details.lx-earlier summary").text
        self.shot("dashboard-after-move")

    def test_the_dashboard_explains_its_states_and_probes_a_corpus(self):
        self.log_in()
        self.open("/admin/dashboard/")
        legend = self.by_css("#health-legend").text
        for state in ("corpus present", "index present", "memory applied with receipt"):
            assert state in legend
        assert "experiments" in self.by_css("#experiments-demo h3").text.lower()
        self.shot("dashboard-legend")
        before = MemoryRecord.objects.count()
        self.by_css("form.lx-probe button").click()
        message = self.by_css("ul.messagelist li").text
        assert " probed: corpus present: yes; index present: yes" in message, message
        assert "retrieval query succeeded: " in message  # the table's words, not yes/no codes
        assert MemoryRecord.objects.count() == before  # a probe reads only
        self.shot("dashboard-probed")
