"""The admin in a real browser (headless Chromium via Selenium), as Django tests its own
admin: log in, open the operator dashboard, retire a preference through the admin action
and its form, then see the tombstone and the journal entry; then grant a Reward Memory
authority checkpoint through the admin add form and revoke it with the admin action.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them). Without
them the test is skipped with the reason printed — except under ``CI=true``, where it
fails. Every page is saved as a PNG under ``tests/artifacts/screens/`` (git-ignored) and
any JavaScript console error fails the test.
"""

import io
import os
import shutil
import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.staticfiles.testing import StaticLiveServerTestCase
from django.core.management import call_command

from preferences.models import PreferenceOperation, PreferenceSubject
from reward_memory.models import AuthorityCheckpoint

SCREENS = Path(__file__).resolve().parents[1] / "artifacts" / "screens"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def _missing_reason() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -r requirements.txt)"
    if not (CHROMIUM and DRIVER):
        return "chromium/chromedriver not found (apt-get install chromium chromium-driver)"
    return None


class AdminInBrowserTests(StaticLiveServerTestCase):
    host = "127.0.0.1"

    @classmethod
    def setUpClass(cls):
        reason = _missing_reason()
        if reason:
            if os.environ.get("CI") == "true":
                raise RuntimeError(f"browser test required under CI: {reason}")
            print(f"\nbrowser test skipped: {reason}", file=sys.stderr)
            import unittest

            raise unittest.SkipTest(reason)
        super().setUpClass()
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                    "--disable-gpu", "--window-size=1400,1000"):  # fmt: skip
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        cls.browser = webdriver.Chrome(service=Service(DRIVER), options=options)
        cls.browser.implicitly_wait(5)
        SCREENS.mkdir(parents=True, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        browser = getattr(cls, "browser", None)
        if browser is not None:
            browser.quit()
        super().tearDownClass()

    def setUp(self):
        call_command("loopx_demo", stdout=io.StringIO())
        get_user_model().objects.create_superuser("operator", password="pw-for-browser-test")
        self.shots: list[str] = []

    # -- helpers ----------------------------------------------------------------------
    def open(self, path: str) -> None:
        self.browser.get(self.live_server_url + path)

    def shot(self, name: str) -> None:
        target = SCREENS / f"{len(self.shots) + 1:02d}-{name}.png"
        self.browser.save_screenshot(str(target))
        self.shots.append(target.name)
        self.assert_no_console_errors(name)

    def assert_no_console_errors(self, page: str) -> None:
        errors = [e for e in self.browser.get_log("browser") if e.get("level") == "SEVERE"]
        assert errors == [], f"JavaScript console errors on {page}"

    def by_css(self, selector):
        from selenium.webdriver.common.by import By

        return self.browser.find_element(By.CSS_SELECTOR, selector)

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
        assert "Statement:\n-" in page
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
