import ast
import pathlib

from hooks import dispatcher, registry
from tests.helpers import ROOT, run_cli
from tests.hooks import providers
from tests.hooks.conftest import PERIODIC
from tests.hooks.factories import settle


def test_default_settings_install_and_admit_the_periodic_report_trigger(db):
    reg = registry.installed()
    assert [h.hook_id for h in reg.hooks] == ["periodic_report.runtime_trigger"]
    assert reg.hooks[0].valid
    profile = registry.profile(None)
    assert profile.post_writeback_hooks_enabled is True
    assert reg.admitted(allowlist=profile.hook_allowlist, event_kind="replan_recorded")


def test_admitted_registrations_are_ordered_by_hook_id_not_by_setting_order(install):
    install("SecondProposer", "Proposer", "Inert", PERIODIC)
    hooks = registry.installed().admitted(allowlist=None, event_kind="todo_completed")
    assert [h.hook_id for h in hooks] == [
        "alpha.inert",
        "beta.proposer",
        "gamma.proposer",
        "periodic_report.runtime_trigger",
    ]


def test_profile_allowlist_admits_a_subset(install):
    install("Proposer", "SecondProposer", "Inert")
    hooks = registry.installed().admitted(allowlist=["gamma.proposer"], event_kind="todo_completed")
    assert [h.hook_id for h in hooks] == ["gamma.proposer"]


def test_event_kind_subscription_filters_hooks(install):
    install("CompletionOnly", "Proposer")
    reg = registry.installed()
    assert [h.hook_id for h in reg.admitted(allowlist=None, event_kind="replan_recorded")] == [
        "beta.proposer"
    ]


def test_uninstallable_entries_are_rejected_without_being_invoked(install):
    install(
        "tests.hooks.providers.DoesNotExist",
        "NotAProvider",
        "WithCommand",
        "WithWriteScope",
        "AbortPolicy",
        "HugeTimeout",
        "DuplicateA",
        "DuplicateB",
        "Proposer",
    )
    reasons = {h.hook_id: h.rejection for h in registry.installed().hooks}
    assert reasons[None] == "provider:not_importable"
    assert reasons["bad.no_produce"] == "provider:not_a_provider"
    assert reasons["bad.command"] == "registration.command:unknown_field"
    assert reasons["bad.write_scope"] == "registration.write_scope:unknown_field"
    assert reasons["bad.abort"] == "registration.failure_policy:must_be_isolate"
    assert reasons["bad.timeout"] == "registration.budget.timeout_ms:out_of_bounds"
    assert reasons["dup.same"] == "registration.hook_id:duplicate"
    assert reasons["beta.proposer"] is None
    assert next(h for h in registry.installed().hooks if h.provider is not None).hook_id == (
        "beta.proposer"
    )


def test_registry_digest_changes_when_a_registration_changes(install):
    install("Proposer")
    first = registry.installed().digest
    install("Proposer", "Inert")
    assert registry.installed().digest != first


def test_hooks_registrations_command_lists_installed_and_rejected(db, install):
    install("Proposer", "WithCommand")
    result = run_cli("hooks", "registrations")
    assert result.code == 0, result.stdout
    rows = {r["hook_id"]: r for r in result.json["registrations"]}
    assert rows["beta.proposer"]["status"] == "installed"
    assert rows["beta.proposer"]["admitted_by_profile"] is True
    assert rows["bad.command"]["status"] == "rejected"
    assert rows["bad.command"]["failure_code"] == "registration_rejected"
    assert rows["bad.command"]["registration"] is None
    text = run_cli("hooks", "registrations", "--format", "text")
    assert text.stdout.splitlines()[0].split()[:3] == ["HOOK_ID", "CAPABILITY_ID", "STATUS"]


CORE_MODULES = [
    "hooks/contracts.py",
    "hooks/dispatcher.py",
    "hooks/isolation.py",
    "hooks/registry.py",
    "hooks/boundary.py",
    "hooks/selectors.py",
    "hooks/models.py",
    "hooks/services/phase.py",
    "hooks/services/settlement.py",
    "hooks/services/replay.py",
    "hooks/services/todos.py",
]


def test_core_never_imports_or_names_a_concrete_capability():
    for rel in CORE_MODULES:
        source = pathlib.Path(ROOT, rel).read_text()
        tree = ast.parse(source)
        imported = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imported.append(node.module or "")
            elif isinstance(node, ast.Import):
                imported += [a.name for a in node.names]
        assert not [m for m in imported if "capabilities" in m or "executors" in m], rel
        assert "periodic_report" not in source, rel


# -- issue 33: a hook that can never run is refused at registration ------------------------
def _quick_providers(n: int) -> list[str]:
    """``n`` answering hooks ``q00.quick`` … with small budgets (so only the hook-count
    ceiling binds), made as classes of this module."""
    names = []
    for i in range(n):
        name = f"Quick{i:02d}"
        capability = f"q{i:02d}"
        cls = type(
            name,
            (providers.Base,),
            {
                "registration": providers.registration(
                    f"{capability}.quick", budget={"timeout_ms": 100, "max_intents_per_dispatch": 1}
                ),
                "intent_contracts": providers.note_contract(capability),
            },
        )
        globals()[name] = cls
        names.append(f"{__name__}.{name}")
    return names


def test_a_ninth_hook_is_refused_at_registration_not_exhausted_at_every_settlement(
    db, install, todo
):
    install(*_quick_providers(dispatcher.MAX_HOOKS_PER_PHASE + 1))
    result = run_cli("hooks", "registrations")
    rows = {r["hook_id"]: r for r in result.json["registrations"]}
    ninth = f"q{dispatcher.MAX_HOOKS_PER_PHASE:02d}.quick"
    assert rows[ninth]["status"] == "rejected"
    assert rows[ninth]["reason"] == "registry:phase:max_hooks"
    assert [r["status"] for h, r in sorted(rows.items()) if h != ninth] == ["installed"] * 8
    dispatches = {d["hook_id"]: d for d in settle().payload["hook_phase"]["dispatches"]}
    assert dispatches[ninth]["failure_code"] == "registration_rejected"
    assert not [d for d in dispatches.values() if d["failure_code"] == "dispatch_budget_exhausted"]


def test_a_hook_past_the_wall_time_ceiling_is_refused_at_registration(install):
    # seven hooks declaring 3 s each; the phase holds 20 s: the last in hook_id order goes
    install("Proposer", "SecondProposer", "Inert", "Printer", "NotJson", "Malformed", "Mutator")
    assert providers.ANSWER_TIMEOUT_MS * 7 > dispatcher.MAX_PHASE_TIMEOUT_MS
    reasons = {h.hook_id: h.rejection for h in registry.installed().hooks}
    assert reasons.pop("tau.printer") == "registry:phase:max_wall_time"
    assert set(reasons.values()) == {None}
