"""Issue 35: extension and recall documents as real LoopX 2.1.1 prints them."""

import pytest

from preferences import services
from preferences.documents import extensions as extension_documents
from preferences.recall.errors import SemanticPreferenceError
from tests.preferences_recall.conftest import extension_config, manifest, provider

SURFACE = "issue_fix.pr_description"


def test_a_recall_preview_bound_to_an_uninstalled_extension_is_a_bad_request(db):
    config = extension_config(extension_id="alpha")
    with pytest.raises(SemanticPreferenceError) as exc:
        services.recall(config, project="p", surface=SURFACE)
    assert (exc.value.code, exc.value.wire_status) == ("extension_not_found", "invalid_request")
    executed = services.recall(config, project="p", surface=SURFACE, execute=True)
    assert executed["status"] == "provider_unavailable"  # the surface's failure policy


def test_upgrade_preview_leaves_enabled_undecided_and_rollback_names_its_version(
    install, write_json
):
    install(manifest("alpha", provider("valid")))  # version 1.0.0
    path = write_json("m2.json", {**manifest("alpha", provider("valid")), "version": "1.1.0"})
    preview = extension_documents.operation(services.upgrade_extension(manifest_path=path))
    assert preview["enabled"] is None
    applied = extension_documents.operation(
        services.upgrade_extension(manifest_path=path, execute=True)
    )
    assert (applied["enabled"], applied["version"]) == (True, "1.1.0")
    back = extension_documents.operation(services.rollback_extension(extension_id="alpha"))
    assert (back["status"], back["version"], back["enabled"]) == ("preview", "1.0.0", True)
