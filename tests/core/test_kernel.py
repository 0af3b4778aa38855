import datetime as dt
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopx_site.core import canonical, clock
from loopx_site.core.errors import DomainError

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def test_canonical_json_sorts_keys_and_uses_compact_separators():
    assert canonical.canonical_json({"b": 1, "a": [1, {"d": 2, "c": "é"}]}) == (
        '{"a":[1,{"c":"é","d":2}],"b":1}'
    )


def test_canonical_bytes_are_utf8_not_ascii_escaped():
    assert canonical.canonical_bytes({"k": "雪"}) == '{"k":"雪"}'.encode()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_canonical_json_refuses_nan_and_infinity(bad):
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical.canonical_json({"x": bad})


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_digest_is_independent_of_key_insertion_order(value):
    reordered = dict(reversed(list(value.items())))
    assert canonical.sha256_hex(value) == canonical.sha256_hex(reordered)


def test_digest_is_pinned_for_a_known_value():
    # sha256 of b'{"a":1}' — a change here breaks every stored identity.
    assert canonical.sha256_hex({"a": 1}) == (
        "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    )
    assert canonical.prefixed_id("pwh_", {"a": 1}).startswith("pwh_015abd7f")
    assert canonical.digest_ref({"a": 1}).startswith("sha256:015abd7f")


def test_nfc_normalises_keys_and_values_so_digests_agree():
    decomposed = {"cafe\u0301": ["e\u0301"]}
    composed = {"café": ["é"]}
    assert canonical.sha256_hex(canonical.nfc(decomposed)) == canonical.sha256_hex(composed)
    assert canonical.sha256_hex(decomposed) != canonical.sha256_hex(composed)


def test_iso_renders_utc_with_z_suffix():
    moment = dt.datetime(2026, 11, 30, 1, 2, 3, tzinfo=dt.UTC)
    assert clock.iso(moment) == "2026-11-30T01:02:03Z"
    assert clock.iso(moment.replace(microsecond=250000)) == "2026-11-30T01:02:03.250Z"
    offset = dt.datetime(2026, 11, 30, 3, 2, 3, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert clock.iso(offset) == "2026-11-30T01:02:03Z"


@pytest.mark.parametrize(
    "text",
    ["2026-02-30T00:00:00Z", "2026-11-30T00:00:00+00:00", "2026-11-30 00:00:00Z", "tomorrow", ""],
)
def test_parse_iso_z_rejects_non_utc_or_impossible_instants(text):
    with pytest.raises(ValueError):
        clock.parse_iso_z(text)


def test_parse_iso_z_accepts_fractional_seconds():
    assert clock.parse_iso_z("2026-11-30T00:00:00.125Z").microsecond == 125000


def test_domain_error_envelope_has_the_pinned_shape():
    err = DomainError(
        "revision_conflict",
        "stale",
        field="expected_revision",
        details={"current_revision": "3"},
        area="semantic_preference",
    )
    assert err.http_status == 409
    assert err.envelope() == {
        "ok": False,
        "schema_version": "semantic_preference_error_v0",
        "status": "revision_conflict",
        "error": "stale",
        "code": "revision_conflict",
        "field": "expected_revision",
        "details": {"current_revision": "3"},
    }
