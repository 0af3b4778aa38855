"""A real browser for admin tests: headless Chromium through Selenium on Django's
``StaticLiveServerTestCase``. Every page a test visits is saved as a PNG under
``tests/artifacts/screens/`` (git-ignored), any JavaScript console error fails the
test, and axe-core (``axe-selenium-python``) audits the page: a serious or critical
accessibility violation fails it.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them). Without
them the tests are skipped with the reason printed — except under ``CI=true``, where
they fail.
"""

import io
import os
import shutil
import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.staticfiles.testing import StaticLiveServerTestCase
from django.core.management import call_command

WCAG_RULES = '{"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa"]}}'
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


class BrowserTestCase(StaticLiveServerTestCase):
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
        cls.browser.set_script_timeout(60)
        SCREENS.mkdir(parents=True, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        browser = getattr(cls, "browser", None)
        if browser is not None:
            browser.quit()
        super().tearDownClass()

    #: How the demo is loaded: ``make run``'s way (``--operator operator``, the operator
    #: owning, reviewing and retiring the demo corpora) or without an operator.
    demo_operator = True

    def setUp(self):
        if self.demo_operator:
            call_command("loopx_demo", "--operator", "operator", stdout=io.StringIO())
            user = get_user_model().objects.get(username="operator")
            user.set_password("pw-for-browser-test")
            user.save()
        else:
            call_command("loopx_demo", stdout=io.StringIO())
            get_user_model().objects.create_superuser("operator", password="pw-for-browser-test")
        self.shots: list[str] = []

    # -- helpers ----------------------------------------------------------------------
    def open(self, path: str) -> None:
        self.browser.get(self.live_server_url + path)

    def shot(self, name: str, *, third_party: tuple[str, frozenset] | None = None) -> None:
        target = SCREENS / f"{self.prefix}{len(self.shots) + 1:02d}-{name}.png"
        self.browser.save_screenshot(str(target))
        self.shots.append(target.name)
        self.assert_no_console_errors(name)
        self.assert_accessible(name, third_party=third_party)

    prefix = ""

    def assert_accessible(self, page: str, *, third_party=None) -> None:
        """axe-core over the page: no serious or critical violation of the WCAG 2.0
        A and AA rules (best-practice rules that axe itself later retired, such as
        ``checkboxgroup`` on a list's selection boxes, are not conformance failures).

        ``third_party=(selector, rules)``: the part of the page under ``selector`` is a
        third-party bundle (Swagger UI): our page around it must be clean, and inside
        it only the listed rules are excused — any other violation there still fails."""
        from axe_selenium_python import Axe

        axe = Axe(self.browser)
        axe.inject()
        if third_party is None:
            bad = _serious(axe.run(context="html", options=WCAG_RULES))
        else:
            selector, excused = third_party
            ours = _serious(self._axe(f'{{"exclude": [["{selector}"]]}}'))
            theirs = _serious(self._axe(f'{{"include": [["{selector}"]]}}'))
            bad = ours + [v for v in theirs if v["id"] not in excused]
        assert not bad, f"accessibility violations on {page}:\n" + axe.report(bad)

    def _axe(self, context_js: str) -> dict:
        """axe.run with a context object (the client library passes only strings)."""
        script = (
            "var done = arguments[arguments.length - 1];"
            f"axe.run({context_js}, {WCAG_RULES}).then(r => done(r));"
        )
        return self.browser.execute_async_script(script)

    def log_in(self) -> None:
        self.open("/admin/login/?next=/admin/")
        self.by_css("#id_username").send_keys("operator")
        self.by_css("#id_password").send_keys("pw-for-browser-test")
        self.by_css("input[type=submit]").click()
        self.by_css("#loopx-dashboard-link a")

    def act(self, action: str, *pks, **fields) -> str:
        """Select rows of the open changelist, fill the action form, run ``action`` and
        return the first message it shows."""
        from selenium.webdriver.support.expected_conditions import staleness_of
        from selenium.webdriver.support.ui import Select, WebDriverWait

        for pk in pks:
            self.by_css(f"input[name=_selected_action][value='{pk}']").click()
        for name, value in fields.items():
            box = self.by_css(f"[name={name}]")
            box.clear()
            box.send_keys(value)
        Select(self.by_css("select[name=action]")).select_by_value(action)
        before = self.browser.find_elements("css selector", "ul.messagelist li")
        self.by_css("button[name=index]").click()
        if before:
            WebDriverWait(self.browser, 15).until(staleness_of(before[0]))
        return self.by_css("ul.messagelist li").text

    def assert_no_console_errors(self, page: str) -> None:
        errors = [e for e in self.browser.get_log("browser") if e.get("level") == "SEVERE"]
        assert errors == [], f"JavaScript console errors on {page}"

    def by_css(self, selector):
        from selenium.webdriver.common.by import By

        return self.browser.find_element(By.CSS_SELECTOR, selector)


def _serious(results) -> list[dict]:
    return [v for v in results["violations"] if v.get("impact") in ("serious", "critical")]
