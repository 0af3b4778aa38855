"""The admin in a real browser: log in, open the operator dashboard, retire a preference
through the admin action and its form, then see the tombstone and the journal entry;
then grant a Reward Memory authority checkpoint through the admin add form and revoke it
with the admin action (``tests/frontdoor/browser.py`` has the harness)."""

import sys

import pytest

from preferences.models import PreferenceOperation, PreferenceSubject
from reward_memory.models import AuthorityCheckpoint
from tests.frontdoor.browser import BrowserTestCase

pytestmark = pytest.mark.slow  # a live server and a real browser


class AdminInBrowserTests(BrowserTestCase):
    demo_operator = False

    # -- the operator's day -------------------------------------------------------------
    def test_operator_logs_in_reads_the_dashboard_and_retires_a_preference(self):
        from selenium.webdriver.support.ui import Select

        self.open("/admin/login/?next=/admin/")
        self.shot("login")
        self.by_css("#id_username").send_keys("operator")
        self.by_css("#id_password").send_keys("pw-for-browser-test")
        self.by_css("input[type=submit]").click()
        self.by_css("#loopx-dashboard-link a")  # the index links the dashboard
        self.shot("index")

        self.by_css("#loopx-dashboard-link a").click()
        assert "/admin/dashboard/" in self.browser.current_url
        self.by_css("#corpus-health td.lx-ok")
        assert "Goal demo" in self.by_css("#goal-demo h2").text
        self.shot("dashboard")

        subject = PreferenceSubject.objects.get(key="review.collaboration")
        self.open("/admin/preferences/preferencesubject/")
        self.by_css(f"input[name=_selected_action][value='{subject.pk}']").click()
        Select(self.by_css("select[name=action]")).select_by_value("retire_selected")
        self.shot("changelist-selected")
        self.by_css("button[name=index]").click()

        self.by_css("#id_source_ref").send_keys("operator-ticket-42")
        self.by_css("#id_source_quote").send_keys("Please drop the reviewer rule.")
        self.shot("retire-form")
        self.by_css("input[type=submit][value='Retire preferences']").click()

        message = self.by_css("ul.messagelist li").text
        assert "review.collaboration: applied at revision 3" in message.lower()
        self.shot("retired")
        subject.refresh_from_db()
        assert subject.state == "retired"  # the tombstone

        self.open(f"/admin/preferences/preferencesubject/{subject.pk}/change/")
        page = self.by_css("#content-main").text
        assert "State:\nRetired" in page  # the tombstone: kept, not actionable
        assert "Statement:\n— (no statement: this preference is retired)" in page
        self.shot("tombstone")

        entry = PreferenceOperation.objects.get(kind="retire", key="review.collaboration")
        self.open("/admin/preferences/preferenceoperation/?kind__exact=retire")
        assert entry.operation_id[:20] in self.by_css("#result_list").text
        self.shot("journal")

        self.grant_and_revoke_a_checkpoint()
        assert len(self.shots) == 12
        print("\nbrowser screenshots: " + ", ".join(self.shots), file=sys.stderr)

    def grant_and_revoke_a_checkpoint(self):
        from selenium.webdriver.support.ui import Select

        self.open("/admin/reward_memory/authoritycheckpoint/add/")
        for field, value in (
            ("checkpoint_id", "browser-checkpoint"),
            ("project", "loopx-demo"),
            ("actor", "user:browser-contributor"),
            ("role", "core_contributor"),
            ("evidence_ref", "roles:loopx-demo/core-contributors"),
            ("action_scopes", "issue_fix.request_reproduction"),
        ):
            self.by_css(f"#id_{field}").send_keys(value)
        self.shot("checkpoint-form")
        self.by_css("input[type=submit][name=_save]").click()

        self.by_css("ul.messagelist li")
        granted = AuthorityCheckpoint.objects.get(checkpoint_id="browser-checkpoint")
        assert (granted.actor, granted.verified_by, granted.revoked_at) == (
            "user:browser-contributor",
            "user:operator",  # the logged-in operator, not a form field
            None,
        )
        assert "browser-checkpoint" in self.by_css("#result_list").text
        self.shot("checkpoint-granted")

        self.by_css(f"input[name=_selected_action][value='{granted.pk}']").click()
        Select(self.by_css("select[name=action]")).select_by_value("revoke")
        self.shot("checkpoint-revoke-selected")
        from selenium.webdriver.support.expected_conditions import staleness_of
        from selenium.webdriver.support.ui import WebDriverWait

        previous = self.by_css("ul.messagelist li")  # the grant's message, still shown
        self.by_css("button[name=index]").click()
        WebDriverWait(self.browser, 15).until(staleness_of(previous))  # the action's page
        message = self.by_css("ul.messagelist li").text
        assert message.lower().startswith("browser-checkpoint: revoked"), message
        granted.refresh_from_db()
        assert granted.revoked_at is not None
        assert granted.revoked_by == "user:operator"
        self.shot("checkpoint-revoked")
