"""Issue 33's last LoopX-facing defects: forbidden scopes by meaning, LoopX's ``+00:00``
timestamps, and ``..`` segments in corpus scope refs."""

import datetime as dt

import pytest

from loopx_site.core import clock
from reward_memory import services
from reward_memory.domain import authority, candidates, uris
from reward_memory.errors import RewardMemoryError
from reward_memory.models import Corpus
from tests.reward_memory import factories as f

# -- forbidden scopes: decided by normalised meaning, not by a list of spellings -------------
SYNONYMS = [
    ("repository_write", "git.pushing"),
    ("repository_write", "repoWrite"),
    ("merge", "pr.merging"),
    ("production_deploy", "deploying"),
    ("cross_project", "crossgoal"),
    ("merge", "approve_pull_request"),
    ("merge", "land_change"),
    ("repository_write", "vcs.commit"),
    ("repository_write", "branch.delete"),
    ("publish_release", "ship_to_users"),
    ("repository_write", "ForcePush"),
    ("repository_write", "tag_create"),
    ("merge", "prMerge"),
    ("production_deploy", "goLive"),
    ("publish_release", "uploadArtifacts"),
    ("cross_project", "all_goals"),
    ("credentials", "vault.ApiKeys.read"),
]


@pytest.mark.parametrize(("family", "scope"), SYNONYMS)
def test_forbidden_scope_synonyms_and_spellings_are_caught(family, scope):
    assert authority.forbidden_family(scope) == family


@pytest.mark.parametrize(
    "scope",
    [
        "issue_fix.request_reproduction",
        "issue_fix.request_changes",
        "issue_fix:scope_selection",
        "review.comment",
        "reward_memory.edit.prefs",
        "reward_memory.read",
        "issue.triage",
        "pr.describe",
    ],
)
def test_ordinary_scopes_stay_grantable(scope):
    assert authority.forbidden_family(scope) is None


@pytest.mark.parametrize("scope", ["git.pushing", "approve_pull_request", "crossgoal"])
def test_a_synonym_is_refused_when_an_operator_grants_it(db, scope):
    with pytest.raises(RewardMemoryError) as exc:
        services.grant_checkpoint(
            checkpoint_id="ckpt-x",
            project=f.PROJECT,
            actor="user:maint-1",
            role="core_contributor",
            action_scopes=[scope],
            operator=f.op(f.OWNER),
            execute=True,
        )
    assert exc.value.code == "forbidden_action_scope"


# -- LoopX's +00:00 timestamps ----------------------------------------------------------------
def test_rfc3339_offsets_are_read_as_the_same_utc_instant():
    same = clock.parse_rfc3339("2026-07-16T02:30:00+02:00")
    assert same == dt.datetime(2026, 7, 16, 0, 30, tzinfo=dt.UTC)
    assert clock.parse_rfc3339("2026-07-16T00:30:00+00:00") == clock.parse_iso_z(
        "2026-07-16T00:30:00Z"
    )
    for bad in ("2026-07-16T00:30:00", "2026-07-16 00:30", "2026-02-30T00:00:00Z", "now"):
        with pytest.raises(ValueError):
            clock.parse_rfc3339(bad)


def test_a_candidate_observed_in_the_offset_form_is_the_candidate_observed_in_z_form():
    z = f.candidate()
    moment = z["source"]["observed_at"]
    offset = {**z, "source": {**z["source"], "observed_at": moment[:-1] + "+00:00"}}
    assert candidates.utc_timestamps(offset)["source"]["observed_at"] == clock.iso(
        clock.parse_iso_z(moment)
    )
    assert candidates.candidate_digest(
        candidates.utc_timestamps(offset)
    ) == candidates.candidate_digest(candidates.utc_timestamps(z))


def test_a_recall_stamped_now_in_the_offset_form_is_not_stale(db, corpus):
    now = clock.now().astimezone(dt.UTC).replace(microsecond=0)
    stamped = now.isoformat()  # 2026-…T…+00:00, LoopX's form
    assert stamped.endswith("+00:00")
    result = f.recalled(
        request=f.recall_request(corpus, freshness={"observed_at": stamped}), execute=False
    )
    codes = {r["code"] for r in result.get("guard", {}).get("reasons", [])}
    assert "freshness_stale" not in codes
    assert result["status"] != "guard_blocked"


# -- `..` segments in corpus scope refs ---------------------------------------------------------
@pytest.mark.parametrize(
    "scope_ref",
    [
        "local:reward_memory/../other",
        "viking://user/u/peers/p/../../q/memories",
        "viking://resources/%2e%2e/secrets",
        "local:./x",
    ],
)
def test_dot_segments_in_a_scope_ref_are_refused_at_registration(db, scope_ref):
    assert uris.scope_ref_problem(scope_ref) is not None
    with pytest.raises(RewardMemoryError) as exc:
        services.register_corpus(corpus=f.corpus_doc("dots", scope_ref=scope_ref), execute=True)
    assert exc.value.field == "corpus.provider_binding.scope_ref"
    assert not Corpus.objects.filter(corpus_id="dots").exists()


def test_dots_inside_a_segment_name_are_not_a_dot_segment():
    assert uris.scope_ref_problem("local:reward_memory/v1..2") is None
