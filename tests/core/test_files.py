import os
import threading

import pytest

from loopx_site.core import files
from loopx_site.core.errors import DomainError


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome = {}

    def read():
        try:
            files.read_json(fifo, option="input")
        except DomainError as err:
            outcome["code"] = err.code
            outcome["message"] = err.message

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert outcome == {"code": "invalid_input_file", "message": "--input must be a regular file."}


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(DomainError) as caught:
        files.read_bytes(tmp_path, option="manifest")
    assert caught.value.field == "manifest"


def test_a_missing_file_says_it_does_not_exist_and_hides_the_path(tmp_path):
    missing = tmp_path / "secret-dir" / "x.json"
    with pytest.raises(DomainError) as caught:
        files.read_json(missing, option="input", not_found_code="input_not_found")
    assert caught.value.code == "input_not_found"
    assert "secret-dir" not in caught.value.message
    assert "does not exist" in caught.value.message


def test_an_oversized_file_is_refused(tmp_path):
    big = tmp_path / "big.json"
    big.write_text('{"a": "' + "x" * 2000 + '"}')
    with pytest.raises(DomainError) as caught:
        files.read_json(big, option="input", max_bytes=1000)
    assert "exceeds 1000 bytes" in caught.value.message


def test_deep_nesting_is_a_coded_error_not_a_recursion_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DomainError) as caught:
        files.read_json(deep, option="input", require_object=False, max_bytes=10**6)
    assert "nests deeper" in caught.value.message


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = '{"a": "' + "[" * 500 + '"}'
    assert files.loads_json(text, option="body", max_depth=4) == {"a": "[" * 500}


@pytest.mark.parametrize("text", ["NaN", '{"a": Infinity}', "{", "[1]"])
def test_non_strict_or_non_object_json_is_refused(text):
    with pytest.raises(DomainError):
        files.loads_json(text, option="input")


def test_invalid_utf8_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(DomainError) as caught:
        files.read_json(bad, option="input")
    assert caught.value.message == "--input is not UTF-8 text."


def test_invalid_json_names_the_flag_as_typed_with_line_and_column(tmp_path):
    from loopx_site.core import files

    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "mode": "run",\n  "x" 1\n}\n')
    with pytest.raises(DomainError) as refused:
        files.read_json(str(bad), option="quota_decision_json")
    message = refused.value.message
    assert message.startswith("--quota-decision-json is not valid JSON (line 3, column 7: ")
    assert "quota_decision_json" not in message
