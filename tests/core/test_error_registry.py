"""One error registry: each code once, with its HTTP status, LoopX status word and
default message; every code a service raises is declared; messages name the caller's
own input (the flag on the CLI, the field on the API)."""

import ast
import importlib
import pathlib

import pytest
from django.core.exceptions import ImproperlyConfigured

from loopx_site.core import errors
from loopx_site.core.errors import (
    REGISTRY,
    DomainError,
    declare,
    declare_file,
    from_database_error,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP_ERRORS = (
    "hooks.errors",
    "preferences.errors",
    "preferences.recall.errors",
    "reward_memory.errors",
    "turn_recall.errors",
)
PACKAGES = ("loopx_site", "preferences", "reward_memory", "hooks", "turn_recall")
# Constructors whose first positional argument is an error code.
RAISERS = {"DomainError", "error"}
# Where ``invalid(code, field, message)`` takes the code first.
CODE_FIRST_INVALID = ("preferences/recall/",)


def _app_error_modules():
    # Importing every app's errors module declares its codes.
    for module in APP_ERRORS:
        importlib.import_module(module)


def _raised_codes():
    """(code, where) of each string literal passed as the code of an error constructor."""
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                relative = str(path.relative_to(ROOT))
                code_first = name == "invalid" and relative.startswith(CODE_FIRST_INVALID)
                if not name or not (name in RAISERS or name.endswith("Error") or code_first):
                    continue
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    if first.value.islower() and " " not in first.value:
                        yield first.value, where


def test_every_code_a_service_raises_is_declared_once():
    _app_error_modules()
    undeclared = sorted({(code, where) for code, where in _raised_codes() if code not in REGISTRY})
    # OpenVikingError / ContractViolation carry failure kinds, not envelope codes.
    undeclared = [
        (c, w) for c, w in undeclared if "openviking_http" not in w and "boundary" not in w
    ]
    assert undeclared == []


def test_a_code_declared_again_with_another_status_fails_at_import():
    _app_error_modules()
    with pytest.raises(ImproperlyConfigured, match="not_found"):
        declare("somewhere_else", {"not_found": (404, "Not found.")})
    assert REGISTRY["not_found"].status == 409  # the journal's, as preferences.md pins


def test_each_code_has_one_status_and_wire_word_whatever_the_area():
    _app_error_modules()
    for code, entry in REGISTRY.items():
        a = DomainError(code, area="semantic_preference")
        b = DomainError(code, area="reward_memory")
        assert (
            (a.http_status, a.wire_status)
            == (b.http_status, b.wire_status)
            == (
                entry.status,
                entry.wire_status,
            )
        )
        assert entry.message, code
        assert entry.message[-1] in ".)", code


@pytest.mark.parametrize(
    ("code", "status", "wire"),
    [
        ("revision_conflict", 409, "revision_conflict"),
        ("scope_forbidden", 403, "forbidden"),
        ("not_authenticated", 401, "unauthenticated"),
        ("database_unavailable", 503, "unavailable"),
        ("store_unavailable", 503, "unavailable"),
        ("provider_failed", 503, "invalid_request"),
        ("throttled", 429, "throttled"),
        ("config_invalid", 400, "invalid_request"),
    ],
)
def test_registry_gives_status_and_loopx_word(code, status, wire):
    err = DomainError(code)
    assert (err.http_status, err.wire_status, err.envelope()["status"]) == (status, wire, wire)


def test_an_undeclared_code_is_still_a_structured_400():
    err = DomainError("no_such_code_anywhere", "x")
    assert (err.http_status, err.envelope()["code"]) == (400, "no_such_code_anywhere")


def test_the_default_message_comes_from_the_registry():
    assert DomainError("route_not_found").message == "No such API route."


def test_one_database_error_translator():
    from django.db import DataError, OperationalError

    refused = from_database_error(DataError("nul"))
    outage = from_database_error(OperationalError("down"))
    assert (refused.code, refused.http_status) == ("invalid_argument", 400)
    assert (outage.code, outage.http_status, outage.wire_status) == (
        "database_unavailable",
        503,
        "unavailable",
    )
    assert from_database_error(ValueError("x")) is None


def test_messages_name_the_flag_on_the_cli_and_the_field_on_the_api():
    message = "recording a review needs `corpus_id` and `record_ref`"
    assert errors.name_fields(message, lambda f: "--" + f.replace("_", "-")) == (
        "recording a review needs --corpus-id and --record-ref"
    )
    assert errors.name_fields(message, str) == "recording a review needs corpus_id and record_ref"


def test_an_errors_table_declares_its_codes_with_status_message_and_loopx_word(tmp_path):
    table = tmp_path / "errors.toml"
    table.write_text(
        'table_test_gone = { status = 404, message = "Gone." }\n'
        'table_test_busy = { status = 409, message = "Busy.", loopx = "conflict" }\n'
    )
    declared = declare_file("table_test", table)
    try:
        assert declared["table_test_gone"] == REGISTRY["table_test_gone"]
        assert (REGISTRY["table_test_gone"].status, REGISTRY["table_test_gone"].message) == (
            404,
            "Gone.",
        )
        assert REGISTRY["table_test_busy"].wire_status == "conflict"
        assert REGISTRY["table_test_gone"].wire_status == "invalid_request"
    finally:
        for code in declared:
            REGISTRY.pop(code, None)


@pytest.mark.parametrize(
    "line",
    [
        'table_test_bad = { status = "409", message = "Busy." }',
        "table_test_bad = { status = 409 }",
        'table_test_bad = { status = 409, message = "Busy.", http = 1 }',
        'table_test_bad = "409 Busy."',
    ],
)
def test_a_malformed_errors_table_fails_at_import_and_declares_nothing(tmp_path, line):
    table = tmp_path / "errors.toml"
    table.write_text(line + "\n")
    with pytest.raises(ImproperlyConfigured, match="table_test_bad"):
        declare_file("table_test", table)
    assert "table_test_bad" not in REGISTRY


def test_every_app_declares_its_codes_from_its_errors_table():
    _app_error_modules()
    owners = {entry.owner for entry in REGISTRY.values()}
    assert {
        "loopx_site.core",
        "preferences",
        "preferences.recall",
        "reward_memory",
        "hooks",
        "turn_recall",
    } <= owners
    assert REGISTRY["cursor_unavailable"].wire_status == "unavailable"
    assert REGISTRY["revision_conflict"].wire_status == "revision_conflict"
