"""The fast canonical encoder writes exactly the canonical bytes for text records."""

import datetime as dt

import pytest

from loopx_site.core.canonical import canonical_bytes, canonical_text_bytes

EVERY_CODE_POINT = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


@pytest.mark.parametrize("start", range(0, len(EVERY_CODE_POINT), 65536))
def test_fast_encoding_is_byte_identical_for_every_code_point(start):
    text = "".join(EVERY_CODE_POINT[start : start + 65536])
    record = {
        "statement": text,
        "key": "subject.k01",
        "nested": {"é": [text[:64], None, True, False, 0, -7, 2**62], "a": None},
        "expires_at": None,
    }
    assert canonical_text_bytes(record) == canonical_bytes(record)


def test_each_control_character_is_escaped_the_same_way():
    for code in range(0x20):
        assert canonical_text_bytes({"v": chr(code)}) == canonical_bytes({"v": chr(code)})


def test_values_json_refuses_are_refused_too():
    with pytest.raises(TypeError):
        canonical_bytes({"at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
    with pytest.raises(TypeError):
        canonical_text_bytes({"at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
