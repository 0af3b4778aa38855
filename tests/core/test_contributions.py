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
