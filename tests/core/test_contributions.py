import pytest

from loopx_site.core.contributions import ContributionError, ExtensionPoint


def test_extension_point_keeps_registration_order_and_refuses_a_key_twice():
    point = ExtensionPoint("demo", "for the test")
    first, second = (lambda: 1), (lambda: 2)
    point.register("b", first)
    point.register("a", second)
    assert [key for key, _ in point] == ["b", "a"]
    point.register("b", first)  # the same callable again is idempotent
    with pytest.raises(ContributionError):
        point.register("b", second)
    assert point.get("a") is second
    with pytest.raises(ContributionError):
        point.get("missing")


def test_the_apps_register_their_dashboard_sections_panels_and_soft_source_in_ready():
    from loopx_site.core import contributions

    sections = dict(contributions.DASHBOARD_SECTIONS)
    assert list(sections) == ["preferences.scopes", "reward_memory.health", "hooks.failures"]
    assert all(isinstance(s, contributions.DashboardSection) for s in sections.values())
    assert [key for key, _ in contributions.DASHBOARD_PANELS] == [
        "reward_memory.experiments",
        "reward_memory.provider_deletes",
    ]
    (source,) = [fn for _, fn in contributions.SOFT_PREFERENCE_SOURCES]
    from reward_memory import selectors

    assert source.path == "reward_memory.selectors.soft_preference_documents"
    assert callable(selectors.soft_preference_documents)


def test_lazy_imports_the_named_callable_only_when_called():
    from loopx_site.core import contributions

    join = contributions.lazy("os.path.join")
    assert join("a", "b") == "a/b"
