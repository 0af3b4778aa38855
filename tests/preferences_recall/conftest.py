import json
import sys
from pathlib import Path

import pytest

PROVIDERS = Path(__file__).resolve().parent / "providers"
SURFACE = "issue_fix.pr_description"
CONFIG_SCHEMA = "semantic_preference_hook_config_v0"


def provider(name: str, *args: str) -> list[str]:
    """argv that runs one of the test providers with this interpreter."""
    return [sys.executable, str(PROVIDERS / f"{name}.py"), *args]


def legacy_config(
    argv: list[str],
    *,
    policy: str = "fail_open",
    limit: int = 5,
    timeout: int = 10,
    enabled: bool = True,
    probe_argv: list[str] | None = None,
    surface: str = SURFACE,
) -> dict:
    provider_obj = {"id": "test_provider", "argv": argv, "timeout_seconds": timeout}
    if probe_argv is not None:
        provider_obj["probe_argv"] = probe_argv
    return {
        "schema_version": CONFIG_SCHEMA,
        "enabled": enabled,
        "provider": provider_obj,
        "surfaces": {
            surface: {
                "query": "PR description structure and reviewer language preferences",
                "limit": limit,
                "failure_policy": policy,
            }
        },
    }


def extension_config(
    *, policy: str = "fail_open", extension_id: str | None = None, args=None, **provider_extra
) -> dict:
    provider_obj: dict = {"id": "ext_provider", **provider_extra}
    if extension_id is not None:
        provider_obj["extension_id"] = extension_id
    if args is not None:
        provider_obj["args"] = args
    return {
        "schema_version": CONFIG_SCHEMA,
        "enabled": True,
        "provider": provider_obj,
        "surfaces": {SURFACE: {"query": "reviewer language preferences", "failure_policy": policy}},
    }


def bound_config(
    extension_id: str,
    *,
    policy: str = "fail_open",
    limit: int = 5,
    surface: str = SURFACE,
    enabled: bool = True,
) -> dict:
    """A registered-config body: it only names an installed extension (no command)."""
    return {
        "schema_version": CONFIG_SCHEMA,
        "enabled": enabled,
        "provider": {"id": "bound_provider", "extension_id": extension_id},
        "surfaces": {
            surface: {
                "query": "PR description structure and reviewer language preferences",
                "limit": limit,
                "failure_policy": policy,
            }
        },
    }


def manifest(
    extension_id: str,
    entrypoint: list[str],
    *,
    doctor: list[str] | None = None,
    timeout: int = 10,
    permission: str = "provider_private",
) -> dict:
    document = {
        "schema_version": "loopx_provider_extension_manifest_v0",
        "extension_id": extension_id,
        "version": "1.0.0",
        "capability": "semantic-preference",
        "protocol": "semantic_preference_provider_v0",
        "entrypoint": entrypoint,
        "permission": permission,
        "timeout_seconds": timeout,
    }
    if doctor is not None:
        document["doctor"] = doctor
    return document


@pytest.fixture
def write_json(tmp_path):
    """``write_json(name, obj)`` → path of a JSON file in the test's tmp dir."""

    def write(name: str, obj) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj))
        return path

    return write


@pytest.fixture
def install(db, write_json):
    """``install(manifest_dict, active=True)`` installs an extension (installs enable it;
    ``active=False`` disables it again)."""
    from loopx_site.core.access import SHELL
    from preferences import services
    from preferences.documents import extensions as extension_documents

    def do(document: dict, *, active: bool = True) -> dict:
        path = write_json(f"manifests/{document['extension_id']}.json", document)
        result = extension_documents.operation(
            services.install_extension(manifest_path=path, execute=True)
        )
        if not active:
            services.deactivate_extension(
                extension_id=document["extension_id"], operator=SHELL, execute=True
            )
        return result

    return do


@pytest.fixture
def bind(install):
    """``bind(name, argv, policy=…, doctor=None, goal_id="demo", project=…)`` installs an
    extension running ``argv`` (id ``ext-<name>``) and registers config ``name`` bound to
    it, owned by ``goal_id`` — the only way a registered config reaches a command."""
    from preferences import services

    def do(
        name: str,
        argv: list[str],
        *,
        policy: str = "fail_open",
        doctor: list[str] | None = None,
        goal_id: str | None = "demo",
        project: str = "loopx-demo",
        limit: int = 5,
        timeout: int = 10,
    ):
        extension_id = f"ext-{name}"
        install(manifest(extension_id, argv, doctor=doctor, timeout=timeout))
        return services.register_config(
            name=name,
            project=project,
            config=bound_config(extension_id, policy=policy, limit=limit),
            goal_id=goal_id,
            execute=True,
        )

    return do
