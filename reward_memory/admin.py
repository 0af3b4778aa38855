"""Operator pages: corpora with a health column, records with lifecycle filters, and
read-only candidates, reviews, ingest receipts, sidecars, recall and application
receipts.

Operator authority lives here too, every write through a service: granting (the add
form) and revoking (an action) authority checkpoints, binding host tokens to corpus
roles, reopening closed lineages, and revoking / superseding / retiring records as the
signed-in operator account (which must be the corpus's declared actor).

Every action declares the model permission it needs (``permissions=[...]``; Django
hides and refuses it otherwise) and the service it calls checks the signed-in account
again (``reward_memory.principals.PERMISSIONS`` plus the corpus role), so a missing
declaration never opens an operation. A refusal is shown as an error message.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from loopx_site.core import access
from loopx_site.core.admin_base import (
    ReadOnlyAdmin,
    ReadOnlyTabularInline,
    admin_link,
    excerpt_column,
    log_admin_action,
    ref_column,
    short_ref,
)
from loopx_site.core.errors import DomainError
from reward_memory import contracts as c
from reward_memory import dashboard, principals, selectors, services
from reward_memory.documents import records as record_documents
from reward_memory.documents import registry
from reward_memory.documents import review as review_documents
from reward_memory.domain import privacy
from reward_memory.models import (
    ApplicationReceipt,
    AuthorityCheckpoint,
    Candidate,
    Corpus,
    CorpusRoleBinding,
    ExperimentBinding,
    IngestEvent,
    LineageClosure,
    MemoryRecord,
    OperatorControl,
    PendingIngest,
    ProviderDeletion,
    RecallReceipt,
    RecordEvidence,
    RecordTransition,
    ReflectionCandidate,
    Review,
    ReviewQueueItem,
    StandingPolicy,
)
from reward_memory.services.operator_control import usable_checkpoints


def _shown(model, *hidden: str) -> tuple[str, ...]:
    """The detail page's read-only fields: every field of ``model`` in declaration order
    but ``id`` and the ``hidden`` ones (private scope refs, provider targets, keys)."""
    return tuple(f.name for f in model._meta.fields if f.name not in ("id", *hidden))


def _each(admin_obj, request, rows, run, *, ref, done=None) -> int:
    """One service call per selected row (``run(row)``): a refusal is an error message
    naming ``ref(row)``, a success goes to ``done(row, result)``; returns how many
    succeeded."""
    count = 0
    for row in rows:
        try:
            result = run(row)
        except DomainError as exc:
            _refused(admin_obj, request, ref(row), exc)
            continue
        count += 1
        log_admin_action(request, row, _reason_note(request))
        if done is not None:
            done(row, result)
    return count


def _reason_note(request) -> str:
    """The typed reasoning of the action form, for the action's log entry."""
    reasoning = (request.POST.get("reasoning_summary") or "").strip()
    return f"reason: {reasoning}" if reasoning else ""


def _action(description: str, run, *args, permissions: tuple[str, ...] = ("change",)):
    """An admin action that is ``run(admin, request, queryset, *args)``: one handler
    serves the actions that differ only in the argument they pass it."""

    @admin.action(description=description, permissions=list(permissions))
    def action(self, request, queryset):
        run(self, request, queryset, *args)

    return action


class _ActionsOnly:
    """Change permission only to offer the model's actions (every field stays read-only):
    the model's own ``change_<model>`` permission, never on a row."""

    def has_change_permission(self, request, obj=None):
        meta = self.model._meta
        return obj is None and request.user.has_perm(f"{meta.app_label}.change_{meta.model_name}")


class _ServiceAdded(_ActionsOnly):
    """An add form whose ``save_model`` calls a service (a refusal leaves ``obj.pk``
    unset, and then no addition is logged); rows are never deleted."""

    def has_delete_permission(self, request, obj=None):
        return False

    def log_addition(self, request, obj, message):
        if obj.pk is not None:
            super().log_addition(request, obj, message)


class StandingPolicyInline(ReadOnlyTabularInline):
    model = StandingPolicy
    fields = ("surface", "policy_digest", "active", "created_at", "retired_at")
    readonly_fields = fields


@admin.register(Corpus)
class CorpusAdmin(ReadOnlyAdmin):
    # What an operator scans first stays in view at 1280 px: health, then the rest.
    list_display = (
        "corpus_id",
        "health",
        "active_records",
        "memory_class",
        "provider_id",
        "ranking",
        "project",
        "visibility",
        "owner",
        "revision",
    )
    list_filter = ("memory_class", "provider_id", "ranking", "active")
    search_fields = ("corpus_id", "project", "owner", "reviewer")
    exclude = ("provider_scope_ref",)
    readonly_fields = _shown(Corpus, "provider_scope_ref", "agent_peers")
    inlines = [StandingPolicyInline]

    @admin.display(description="visibility (who reads)")
    def visibility(self, obj):
        return privacy.visibility_summary(obj)

    @admin.display(description="active records")
    def active_records(self, obj):
        return selectors.live_records(obj).count()

    @admin.display(description="health (separate states)")
    def health(self, obj):
        return registry.health_summary(services.health_facts(obj))

    def get_urls(self):
        probe = path(
            "<path:object_id>/probe/",
            self.admin_site.admin_view(self.probe_view),
            name="reward_memory_corpus_probe",
        )
        return [probe, *super().get_urls()]

    def probe_view(self, request, object_id):
        """``probe now`` (a POST from the dashboard): the provider's read-only preflight
        and the other four states, shown as a message; nothing is written."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        corpus = self.get_object(request, object_id)
        if corpus is None or not self.has_view_permission(request, corpus):
            raise PermissionDenied
        health = services.health_facts(corpus)
        index = health["health"]["index_present"]
        level = messages.SUCCESS if index["value"] else messages.WARNING
        why = f" ({index['failure_kind']})" if index.get("failure_kind") else ""
        values = {state: fact["value"] for state, fact in health["health"].items()}
        dashboard.remember_probe(request, corpus.pk, values)
        self.message_user(
            request,
            f"{corpus.corpus_id} probed: {dashboard.health_words(values)}{why}",
            level,
        )
        # No anchor: the page opens at its top, where the message is.
        return HttpResponseRedirect(reverse("loopx-dashboard"))


@admin.register(StandingPolicy)
class StandingPolicyAdmin(ReadOnlyAdmin):
    list_display = ("corpus", "surface", ref_column("policy_digest"), "active", "created_at")
    list_filter = ("active", "corpus")
    search_fields = ("policy_digest", "surface", "corpus__corpus_id")
    readonly_fields = _shown(StandingPolicy, "retired_at")


class OperatorControlActionForm(ActionForm):
    """Fields the operator fills in next to the action menu (operator control)."""

    control_ref = forms.CharField(required=False, label="Checkpoint id")
    reasoning_summary = forms.CharField(required=False, label="Reasoning")
    edited_content_summary = forms.CharField(required=False, label="Edited summary")


class TransitionInline(ReadOnlyTabularInline):
    """The record's lifecycle, one readable row per step; a reference that names a
    record, review or checkpoint links to it (by its ref, never a database id)."""

    model = RecordTransition
    fields = ("seq", "from_state", "to_state", "reason", "actor", "referenced", "at")
    readonly_fields = fields

    @admin.display(description="reference")
    def referenced(self, obj):
        if not obj.reference:
            return "—"
        target = selectors.transition_reference(obj.reference)
        if target is None:
            return short_ref(obj.reference)
        label = obj.reference if len(obj.reference) <= 20 else obj.reference[:16] + "…"
        return admin_link(target, f"{target._meta.verbose_name} {label}")


class EvidenceInline(ReadOnlyTabularInline):
    """Duplicates whose evidence joined this record (``services.duplicates``): accepted at
    review, or ingested by standing policy (``event``)."""

    model = RecordEvidence
    fields = (
        "candidate_ref",
        "evidence_ref",
        "similarity",
        "review",
        "event",
        "added_by",
        "added_at",
    )
    readonly_fields = fields
    verbose_name_plural = "evidence added by duplicates (reviewed or ingested)"


@admin.register(MemoryRecord)
class MemoryRecordAdmin(_ActionsOnly, ReadOnlyAdmin):
    list_display = (
        ref_column("record_ref"),
        "corpus",
        "memory_class",
        "lifecycle_state",
        "provider_delete",
        excerpt_column("summary"),
        "state_changed_at",
    )
    list_filter = (
        "lifecycle_state",
        "memory_class",
        "activation_basis",
        ("provider_deletion__state", admin.AllValuesFieldListFilter),
        "corpus",
    )
    list_select_related = ("corpus", "provider_deletion")
    search_fields = ("record_ref", "candidate_ref", "surface", "project", "summary")
    exclude = ("provider_resource_ref", "provider_actor_peer_id")
    readonly_fields = (
        *_shown(
            MemoryRecord, "authority_checkpoint", "provider_resource_ref", "provider_actor_peer_id"
        ),
        "provider_delete",
    )
    inlines = [TransitionInline, EvidenceInline]
    actions = ["revoke", "retire", "supersede", "operator_edit", "operator_retire"]
    action_form = OperatorControlActionForm

    @admin.display(description="provider delete")
    def provider_delete(self, record) -> str:
        """``pending (2 attempts, unavailable)`` / ``confirmed`` / ``failed (…)`` / ``—``."""
        row = getattr(record, "provider_deletion", None)
        if row is None:
            return "—"
        if row.state == "confirmed":
            return "confirmed"
        return f"{row.state} ({row.attempts} attempts, {row.failure_kind or 'not yet tried'})"

    def _each(self, request, queryset, run, verb):
        principal = _operator(request)
        _each(
            self,
            request,
            queryset,
            lambda record: run(record, principal),
            ref=lambda record: record.record_ref,
            done=lambda _, record: _performed(self, request, record, verb),
        )

    #: the closing operations offered here: verb → the service call on (record, principal)
    CLOSERS = {
        "revoked": lambda r, p: services.revoke_record(
            record_ref=r.record_ref, principal=p, revocation_ref=f"admin:{p.name}"
        ),
        "retired": lambda r, p, reason: services.retire_record(
            record_ref=r.record_ref, principal=p, reason_summary=reason or "admin action"
        ),
    }

    def _close(self, request, queryset, verb: str) -> None:
        closer = self.CLOSERS[verb]
        if verb == "retired":  # the typed Reasoning is the retirement's reason
            reason = (request.POST.get("reasoning_summary") or "").strip()
            self._each(request, queryset, lambda r, p: closer(r, p, reason), verb)
            return
        self._each(request, queryset, closer, verb)

    revoke = _action("Revoke the selected records (as the signed-in operator)", _close, "revoked")
    retire = _action("Retire the selected records (as the signed-in operator)", _close, "retired")
    operator_edit = _action(
        "Operator control: edit (needs an owner checkpoint)",
        lambda *a: _operator_control(*a, "edit"),
    )
    operator_retire = _action(
        "Operator control: retire (needs a retirement checkpoint)",
        lambda *a: _operator_control(*a, "retire"),
    )

    @admin.action(
        description="Supersede the older selected records by the newest one", permissions=["change"]
    )
    def supersede(self, request, queryset):
        rows = list(queryset.order_by("-activated_at", "-pk"))
        if len(rows) < 2:
            self.message_user(request, "Select the successor and the records it replaces.")
            return
        successor = rows[0]
        self._each(
            request,
            queryset.exclude(pk=successor.pk),
            lambda r, p: services.supersede_record(
                record_ref=r.record_ref, by_record_ref=successor.record_ref, principal=p
            ),
            "superseded",
        )


def _missing_checkpoint(admin_obj, request, record, action: str) -> None:
    """The checkpoint id is required: say so, and name the checkpoints that would do."""
    usable = usable_checkpoints(record, action)
    grants = reverse("admin:reward_memory_authoritycheckpoint_changelist")
    if usable:
        offer = format_html_join(", ", "<code>{}</code>", ((u,) for u in usable))
        hint = format_html("checkpoints you may use here: {}", offer)
    else:
        hint = format_html(
            'no live checkpoint allows it yet: grant one in <a href="{}">Authority checkpoints</a>',
            grants,
        )
    admin_obj.message_user(
        request,
        format_html(
            "{}: a Checkpoint id is required for operator control {} — {}.",
            record.record_ref,
            action,
            hint,
        ),
        messages.ERROR,
    )


def _operator_control(admin_obj, request, queryset, action: str) -> None:
    data = request.POST
    for record in queryset:
        if not (data.get("control_ref") or "").strip():
            _missing_checkpoint(admin_obj, request, record, action)
            continue
        try:
            decision = services.operator_control(
                record_ref=record.record_ref,
                action=action,
                control_ref=data.get("control_ref", ""),
                reasoning_summary=data.get("reasoning_summary", ""),
                edited_content_summary=data.get("edited_content_summary") or None,
                principal=_operator(request),
                execute=True,  # stored as an OperatorControl row (a dogfood batch names it)
            )
        except DomainError as exc:
            _refused(admin_obj, request, record.record_ref, exc)
            continue
        control_id = decision.row.control_id  # executed: the stored control
        log_admin_action(request, record, f"operator control {action} ({control_id})")
        if action == "edit":
            queue = reverse("admin:reward_memory_reviewqueueitem_changelist") + f"?q={control_id}"
            admin_obj.message_user(
                request,
                format_html(
                    "{}: replacement candidate recorded (control {}); the corpus reviewer "
                    'decides it in the <a href="{}">review queue</a>.',
                    record.record_ref,
                    control_id,
                    queue,
                ),
                messages.SUCCESS,
            )
            continue
        # retire: the service stored the decision and retired the record in one
        # transaction (the same operation as the CLI's and the API's)
        record.refresh_from_db()
        _performed(admin_obj, request, record, f"retired under control {control_id}")


def _performed(admin_obj, request, record, verb: str) -> None:
    """One performed record operation: what was done, and the write read back."""
    back = record_documents.readback(selectors.fresh_lifecycle_state(record))
    recall = "still recallable" if back["recallable"] else "no longer recallable"
    admin_obj.message_user(
        request,
        format_html(
            "{}: {}; read back: {}, {}.",
            admin_link(record, record.record_ref),
            verb,
            back["lifecycle_state"],
            recall,
        ),
        messages.SUCCESS if not back["recallable"] else messages.WARNING,
    )


def _operator(request) -> principals.Principal:
    """The signed-in account, through the one caller resolver."""
    return access.signed_in(request)


#: The action form's labels for the service fields they fill, so a refusal names what the
#: operator typed into ("Checkpoint id", not ``control_ref``).
FIELD_LABELS = {
    "control_ref": "Checkpoint id",
    "reasoning_summary": "Reasoning",
    "edited_content_summary": "Edited summary",
}


def _refused(admin_obj, request, ref: str, exc: DomainError) -> None:
    """A service's refusal (its code and the message naming who holds the authority),
    in the words of the form the operator filled in."""
    message = exc.message
    for field, label in FIELD_LABELS.items():
        message = message.replace(field, label)
    admin_obj.message_user(request, f"{ref}: {exc.code} ({message})", messages.ERROR)


class CheckpointGrantForm(forms.ModelForm):
    """The grant form; ``clean`` runs the service's preview so a refused grant is a form
    error, and ``save_model`` performs it."""

    action_scopes = forms.CharField(
        required=False,
        help_text="Comma-separated action scopes (none: a role binding of the actor only).",
    )
    operator: principals.Principal | None = None  # set per request by the admin

    class Meta:
        model = AuthorityCheckpoint
        fields = ("checkpoint_id", "project", "actor", "role", "evidence_ref", "expires_at")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The admin's split date/time widget shows one label for two inputs: name each
        # (screen readers announce them; axe's "label" rule).
        widget = self.fields["expires_at"].widget
        for part, sub in zip(("date", "time"), getattr(widget, "widgets", ()), strict=False):
            sub.attrs.setdefault("aria-label", f"Expires at ({part})")

    def grant(self, operator: principals.Principal, *, execute: bool):
        data = self.cleaned_data
        return services.grant_checkpoint(
            checkpoint_id=data.get("checkpoint_id"),
            project=data.get("project"),
            actor=data.get("actor"),
            role=data.get("role"),
            action_scopes=[
                s.strip() for s in data.get("action_scopes", "").split(",") if s.strip()
            ],
            operator=operator,
            expires_at=data.get("expires_at"),
            evidence_ref=data.get("evidence_ref") or "",
            execute=execute,
        )

    def validate_unique(self):
        pass  # the service decides (an identical re-grant is unchanged, not an error)

    def clean(self):
        data = super().clean()
        try:
            self.grant(self.operator, execute=False)
        except DomainError as exc:
            raise forms.ValidationError(f"{exc.code}: {exc.message}") from None
        return data


@admin.register(AuthorityCheckpoint)
class AuthorityCheckpointAdmin(_ServiceAdded, admin.ModelAdmin):
    """Grant (add form, model add permission) and revoke (action, change permission).
    Checkpoints are never edited in place: revoke and grant a new id."""

    form = CheckpointGrantForm
    # Live or not first (revoked at, expires at), in view at 1280 px.
    list_display = (
        "checkpoint_id",
        "actor",
        "revoked_at",
        "expires_at",
        "role",
        "project",  # (verified by and at: on the detail page)
    )
    list_filter = ("project", "role", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("checkpoint_id", "project", "actor")
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return [f.name for f in AuthorityCheckpoint._meta.fields]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None:  # the grant preview runs as the signed-in operator
            form = type(form.__name__, (form,), {"operator": _operator(request)})
        return form

    def has_revoke_permission(self, request):
        return request.user.has_perm("reward_memory.revoke_authoritycheckpoint")

    def get_fields(self, request, obj=None):
        if obj is None:
            return (*CheckpointGrantForm.Meta.fields, "action_scopes")
        return [f.name for f in AuthorityCheckpoint._meta.fields if f.name != "id"]

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        try:
            services.grant_checkpoint(
                checkpoint_id=data["checkpoint_id"],
                project=data["project"],
                actor=data["actor"],
                role=data["role"],
                action_scopes=[s.strip() for s in data["action_scopes"].split(",") if s.strip()],
                operator=_operator(request),
                expires_at=data.get("expires_at"),
                evidence_ref=data.get("evidence_ref") or "",
                execute=True,
            )
        except DomainError as exc:
            self.message_user(request, f"Not granted: {exc.code} ({exc.message})", messages.ERROR)
            return
        obj.pk = AuthorityCheckpoint.objects.get(checkpoint_id=data["checkpoint_id"]).pk

    @admin.action(
        description="Revoke the selected checkpoints (and their hard_policies)",
        permissions=["revoke"],
    )
    def revoke(self, request, queryset):
        _each(
            self,
            request,
            queryset,
            lambda row: services.revoke_checkpoint(
                checkpoint_id=row.checkpoint_id,
                operator=_operator(request),
                reason="admin action",
                execute=True,
            ),
            ref=lambda row: row.checkpoint_id,
            done=lambda row, result: self.message_user(
                request,
                f"{row.checkpoint_id}: {result.status}, "
                f"{result.records_revoked} derived record(s) revoked.",
                messages.SUCCESS,
            ),
        )


@admin.register(CorpusRoleBinding)
class CorpusRoleBindingAdmin(_ServiceAdded, admin.ModelAdmin):
    """Bind a host token to a corpus role (add form) or unbind it (action)."""

    list_display = ("corpus", "role", "host_token", "granted_by", "granted_at", "revoked_at")
    list_filter = ("role", ("revoked_at", admin.EmptyFieldListFilter))
    fields = ("corpus", "role", "host_token")
    actions = ["unbind"]

    def save_model(self, request, obj, form, change):
        try:
            binding = services.bind_role(
                corpus_id=obj.corpus.corpus_id,
                role=obj.role,
                host_token=obj.host_token,
                operator=_operator(request),
            )
        except DomainError as exc:
            _refused(self, request, "Not bound", exc)
            return
        obj.pk = binding.pk

    @admin.action(description="Unbind the selected role bindings", permissions=["change"])
    def unbind(self, request, queryset):
        done = _each(
            self,
            request,
            queryset,
            lambda binding: services.unbind_role(binding=binding, operator=_operator(request)),
            ref=lambda binding: f"binding {binding.pk}",
        )
        if done:
            self.message_user(request, f"Unbound {done}.", messages.SUCCESS)


@admin.register(LineageClosure)
class LineageClosureAdmin(_ActionsOnly, ReadOnlyAdmin):
    list_display = ("candidate_ref", "corpus", "reason", "closed_by", "closed_at", "reopened_at")
    list_filter = ("reason", "corpus", ("reopened_at", admin.EmptyFieldListFilter))
    search_fields = ("candidate_ref", "content_digest", "reference")
    readonly_fields = _shown(LineageClosure)
    actions = ["reopen"]

    @admin.action(description="Reopen the selected lineages", permissions=["change"])
    def reopen(self, request, queryset):
        done = _each(
            self,
            request,
            queryset.filter(reopened_at__isnull=True).select_related("corpus"),
            lambda closure: services.reopen_lineage(
                corpus_id=closure.corpus.corpus_id,
                candidate_ref=closure.candidate_ref,
                operator=_operator(request),
                execute=True,
            ),
            ref=lambda closure: closure.candidate_ref,
        )
        if done:
            self.message_user(request, f"Reopened {done}.", messages.SUCCESS)


class CandidateDecisionFilter(admin.SimpleListFilter):
    """Where a candidate stands for a human: awaiting the reviewer (the to-do), accepted
    and awaiting the owner's apply, or decided; and "awaiting me", the candidates whose
    next step is the signed-in operator's (the decision where they are the corpus
    reviewer, the apply where they are its owner) — like the review queue's."""

    title = "decision"
    parameter_name = "decision"

    def lookups(self, request, model_admin):
        return [
            ("awaiting", "awaiting the reviewer"),
            ("apply", "accepted, awaiting apply"),
            ("decided", "decided"),
            ("mine", "awaiting me"),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "awaiting":
            return selectors.candidates_awaiting_reviewer(queryset)
        if value == "apply":
            return selectors.candidates_awaiting_apply(queryset)
        if value == "mine":
            return selectors.candidates_awaiting(_operator(request).actor_ref, queryset)
        if value == "decided":
            return queryset.exclude(
                pk__in=selectors.candidates_awaiting_reviewer(queryset).values("pk")
            ).exclude(pk__in=selectors.candidates_awaiting_apply(queryset).values("pk"))
        return queryset


@admin.register(Candidate)
class CandidateAdmin(_ActionsOnly, ReadOnlyAdmin):
    """Candidates from hosts and ingest, decided here as the corpus reviewer through the
    same ``services.review_candidate`` the CLI and API call (a new review of the stored
    candidate document; its owner then applies an accepted one from Reviews)."""

    list_display = (
        ref_column("candidate_ref"),
        "corpus",
        "proposed_text",
        "latest_decision",
        "guard_status",
        ref_column("duplicate_of", description="duplicate of"),
        "created_at",
    )
    actions = ["review_accept", "review_reject", "review_no_write"]

    @admin.display(description="proposed text")
    def proposed_text(self, obj):
        return str((obj.document or {}).get("content_summary") or "(withheld)")[:120]

    @admin.display(description="latest decision")
    def latest_decision(self, obj):
        review = obj.reviews.order_by("-created_at", "-pk").first()
        if review is None:
            return "awaiting the reviewer"
        applied = ", applied" if review.applied_at else ""
        return f"{review.effective_decision}{applied}"

    def _review(self, request, queryset, decision: str) -> None:
        def reviewed(candidate, review) -> None:
            self.message_user(
                request,
                format_html(
                    "{}: {} recorded as review {}.",
                    admin_link(candidate, candidate.candidate_ref[:20] + "…"),
                    review.row.effective_decision,
                    review.row.review_id[:20] + "…",
                ),
                messages.SUCCESS,
            )

        _each(
            self,
            request,
            queryset.select_related("corpus"),
            lambda candidate: services.review_queue.decide_candidate(
                candidate=candidate, decision=decision, principal=_operator(request)
            ),
            ref=lambda candidate: candidate.candidate_ref,
            done=reviewed,
        )

    review_accept = _action("Accept the selected candidates (as the reviewer)", _review, "accept")
    review_reject = _action("Reject the selected candidates (as the reviewer)", _review, "reject")
    review_no_write = _action("Decide no_write (as the reviewer)", _review, "no_write")
    list_filter = (CandidateDecisionFilter, "guard_status", "target_class", "corpus")
    search_fields = ("candidate_ref", "prior_candidate_ref", "surface", "project", "duplicate_of")
    readonly_fields = (
        "candidate_ref",
        "corpus",
        "target_class",
        "project",
        "surface",
        "document",
        "guard_status",
        "guard_reasons",
        "prior_candidate_ref",
        "duplicate_of",
        "duplicate_similarity",
        "created_at",
    )


@admin.register(Review)
class ReviewAdmin(_ActionsOnly, ReadOnlyAdmin):
    list_display = (
        ref_column("review_id"),
        "corpus",
        "requested_decision",
        "effective_decision",
        "guard_status",
        "reviewer",
        "applied_at",
    )
    list_filter = ("effective_decision", "requested_decision", "guard_status", "corpus")
    search_fields = ("review_id", "candidate__candidate_ref", "reviewer", "target_record_ref")
    readonly_fields = _shown(Review)
    actions = ["apply_selected"]

    @admin.action(
        description="Apply the accepted reviews (as the corpus owner, with readback)",
        permissions=["change"],
    )
    def apply_selected(self, request, queryset):
        def applied(review, result) -> None:
            self.message_user(
                request,
                f"{review.review_id[:20]}…: {review_documents.review_step(result)['status']}.",
                messages.SUCCESS,
            )

        _each(
            self,
            request,
            queryset,
            lambda review: services.review_queue.apply_accepted(
                review=review, principal=_operator(request)
            ),
            ref=lambda review: review.review_id,
            done=applied,
        )


@admin.register(IngestEvent)
class IngestEventAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("event_ref"),
        "goal",
        "agent",
        "corpus",
        "status",
        ref_column("duplicate_of", description="duplicate of"),
        "observed_at",
        "attempts",
    )
    list_filter = ("status", "adapter", "corpus")
    search_fields = ("event_ref", "candidate_ref", "goal__goal_id", "agent__agent_id")
    readonly_fields = _shown(IngestEvent, "event_key", "submitted_token")


@admin.register(PendingIngest)
class PendingIngestAdmin(_ActionsOnly, ReadOnlyAdmin):
    list_display = (
        "event",
        "goal",
        "agent",
        "reason",
        "attempts",
        "last_attempt_at",
        "resolved_at",
    )
    list_filter = ("reason", ("resolved_at", admin.EmptyFieldListFilter))
    search_fields = ("event__event_ref", "goal__goal_id", "agent__agent_id")
    readonly_fields = _shown(PendingIngest)
    actions = ["retry"]

    @admin.action(
        description="Retry pending ingests of the selected rows' Agents", permissions=["change"]
    )
    def retry(self, request, queryset):
        agents = {
            (p.goal.goal_id, p.agent.agent_id) for p in queryset.select_related("goal", "agent")
        }
        _each(
            self,
            request,
            sorted(agents),
            lambda agent: services.retry_pending_ingests(
                goal_id=agent[0], agent_id=agent[1], operator=_operator(request)
            ),
            ref="/".join,
            done=lambda agent, summary: self.message_user(
                request,
                f"{'/'.join(agent)}: {summary.activated} activated, "
                f"{summary.still_pending} still pending, {summary.blocked} blocked.",
                messages.SUCCESS,
            ),
        )


@admin.register(ProviderDeletion)
class ProviderDeletionAdmin(_ActionsOnly, ReadOnlyAdmin):
    """The outbox of provider deletes of closed records (``services.provider_deletions``):
    read-only rows; a ``failed`` one is put back to ``pending`` by the retry action."""

    list_display = (
        "record",
        "provider_id",
        "reason",
        "state",
        "attempts",
        "failure_kind",
        "next_attempt_at",
        "confirmed_at",
    )
    list_filter = ("state", "failure_kind", "provider_id", "reason")
    list_select_related = ("record",)
    search_fields = ("record__record_ref",)
    readonly_fields = _shown(ProviderDeletion)
    actions = ["retry"]

    @admin.action(description="Retry the selected failed provider deletes", permissions=["change"])
    def retry(self, request, queryset):
        _each(
            self,
            request,
            list(queryset.select_related("record")),
            lambda row: services.provider_deletions.retry(
                record_ref=row.record.record_ref, operator=_operator(request)
            ),
            ref=lambda row: row.record.record_ref,
            done=lambda row, result: self.message_user(
                request, f"{row.record.record_ref}: {result.state}", messages.SUCCESS
            ),
        )


@admin.register(RecallReceipt)
class RecallReceiptAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("recall_id"),
        "corpus",
        "surface",
        "mode",
        "status",
        "query_count",
        "created_at",
    )
    list_filter = ("status", "mode", "corpus")
    search_fields = ("recall_id", "surface", "goal__goal_id", "agent__agent_id")
    readonly_fields = _shown(RecallReceipt)


@admin.register(ApplicationReceipt)
class ApplicationReceiptAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("application_receipt_id", description="receipt"),
        "corpus",
        "decision",
        "status",
        "created_at",
    )
    list_filter = ("status", "decision", "corpus")
    search_fields = ("application_receipt_id", "recall__recall_id")
    readonly_fields = _shown(ApplicationReceipt)


@admin.register(ExperimentBinding)
class ExperimentBindingAdmin(ReadOnlyAdmin):
    """The experiment registry, one row per (Goal, Agent) (written only by
    ``configure_goal``). The private config's path is not shown; its digest, the Agent
    and its public-safe receipt are."""

    list_display = (
        "goal",
        "agent",
        "enabled",
        "experimental",
        ref_column("config_digest"),
        "revision",
        "updated_at",
    )
    list_filter = ("enabled",)
    search_fields = ("goal__goal_id", "agent__agent_id")
    fields = readonly_fields = _shown(ExperimentBinding, "config_path")


class ReflectionStateFilter(admin.SimpleListFilter):
    """A reflection's state, and "awaiting me": those awaiting evidence validation when
    the signed-in operator may record a validation by hand (a reflection names no
    reviewer; whoever holds ``record_reflection_validation`` decides it)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [
            (c.REFLECTION_AWAITING, "awaiting evidence validation"),
            ("ingest_pending", "ingest pending"),
            (c.REFLECTION_FINALIZED, "finalized"),
            ("mine", "awaiting me"),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "mine":
            if not request.user.has_perm("reward_memory.record_reflection_validation"):
                return queryset.none()
            return queryset.filter(status=c.REFLECTION_AWAITING)
        return queryset.filter(status=value) if value else queryset


#: Short words for a reflection's state (the stored codes are long unbroken words).
REFLECTION_STATE_WORDS = {
    c.REFLECTION_AWAITING: "awaiting validation",
    c.REFLECTION_FINALIZED: "finalized",
    "ingest_pending": "ingest pending",
}


@admin.register(ReflectionCandidate)
class ReflectionCandidateAdmin(ReadOnlyAdmin):
    """Operators may record a candidate's validation by hand (as themselves)."""

    # In view at 1280 px: the digest, surface and Turn shortened (whole value on hover),
    # the state in words, the Goal/Agent in one column (the Goal is its prefix).
    list_display = (
        ref_column("reflection_digest", description="reflection"),
        "state",
        "agent",
        "surface_short",
        ref_column("turn_instance_id", description="turn"),
        "turn_settled",
        "updated_at",
    )
    list_filter = (ReflectionStateFilter, "turn_settled", "surface")
    search_fields = ("reflection_digest", "turn_instance_id")
    actions = ["record_validation_passed", "record_validation_failed"]

    def has_record_validation_permission(self, request) -> bool:
        return request.user.has_perm("reward_memory.record_reflection_validation")

    def _record(self, request, queryset, status: str) -> None:
        principal = _operator(request)
        done = _each(
            self,
            request,
            queryset.select_related("goal", "agent"),
            lambda row: services.record_validation(
                goal_id=row.goal.goal_id,
                agent_id=row.agent.agent_id,
                reflection_digest=row.reflection_digest,
                status=status,
                principal=principal,
                evidence_ref=f"admin:{principal.name}",
                execute=True,
            ),
            ref=str,
        )
        if done:
            self.message_user(request, f"Recorded {status} for {done} reflection(s).")

    record_validation_passed = _action(
        "Record validation: passed (as the signed-in operator)",
        _record, "passed", permissions=("record_validation",),
    )  # fmt: skip
    record_validation_failed = _action(
        "Record validation: failed (as the signed-in operator)",
        _record, "failed", permissions=("record_validation",),
    )  # fmt: skip

    readonly_fields = _shown(ReflectionCandidate)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("goal", "agent", "agent__goal")

    @admin.display(description="state", ordering="status")
    def state(self, obj):
        return format_html(
            '<span title="{}">{}</span>',
            obj.status,
            REFLECTION_STATE_WORDS.get(obj.status, obj.status),
        )

    @admin.display(description="surface", ordering="surface")
    def surface_short(self, obj):
        return short_ref(obj.surface, keep=24)


@admin.register(OperatorControl)
class OperatorControlAdmin(ReadOnlyAdmin):
    """Stored operator-control decisions (``operator-control --execute``), the records a
    dogfood batch's operator controls reference by ``control_id``."""

    list_display = (
        ref_column("control_id"),
        "action",
        "corpus",
        ref_column("record__record_ref", description="record"),
        "operator",
        "created_at",
    )
    list_filter = ("action", "corpus")
    search_fields = ("control_id", "control_ref")
    readonly_fields = (
        "control_id",
        "action",
        "corpus",
        "record",
        "control_ref",
        "operator",
        "document",
        "created_at",
    )


class ReviewQueueActionForm(ActionForm):
    edited_content_summary = forms.CharField(
        required=False,
        label="Edited summary",
        help_text="For “Edit the replacement”: the summary the reviewer writes instead.",
    )


class QueueStateFilter(admin.SimpleListFilter):
    """Where each item's review chain stands (``services.review_queue.head``), and
    "awaiting me": the items whose next step is the signed-in operator's (the corpus
    reviewer's decision, or the owner's apply of an accepted replacement)."""

    title = "state"
    parameter_name = "state"
    CHOICES = (
        ("awaiting_review", "awaiting the reviewer"),
        ("accepted", "accepted, awaiting the owner's apply"),
        ("applied", "applied"),
        ("closed", "rejected or no_write"),
        ("mine", "awaiting me"),
    )
    # Later (issue 32, ``relevance``): a candidate marked ``duplicate_of`` another joins
    # the queue here as its own state, "duplicate: awaiting the reviewer".

    def lookups(self, request, model_admin):
        return self.CHOICES

    def queryset(self, request, queryset):
        wanted = self.value()
        if not wanted:
            return queryset
        me = _operator(request).actor_ref if wanted == "mine" else None
        keep = [item.pk for item in queryset if _queue_match(item, wanted, me)]
        return queryset.filter(pk__in=keep)


def _queue_match(item, wanted: str, me: str | None) -> bool:
    state = services.review_queue.head(item).state
    if wanted == "mine":
        awaiting = services.review_queue.AWAITING
        return (state == awaiting and item.corpus.reviewer == me) or (
            state == services.review_queue.ACCEPTED and item.corpus.owner == me
        )
    if wanted == "closed":
        return state in ("reject", "no_write")
    return state == wanted


@admin.register(ReviewQueueItem)
class ReviewQueueAdmin(_ActionsOnly, ReadOnlyAdmin):
    """Operator-control edits waiting for the corpus reviewer, then the owner: each
    action is one ``services.review_queue`` call as the signed-in operator."""

    list_display = (
        ref_column("control_id", description="control"),
        "corpus",
        "current_summary",
        "proposed_summary",
        "queue_state",
        "duplicate_of",
        "created_at",
    )
    list_filter = (QueueStateFilter, "corpus")
    search_fields = ("control_id", "record__record_ref", "record__summary")
    readonly_fields = (
        "control_id",
        "corpus",
        "record",
        "control_ref",
        "operator",
        "current_summary",
        "proposed_summary",
        "queue_state",
        "duplicate_of",
        "created_at",
    )
    fields = readonly_fields
    action_form = ReviewQueueActionForm
    actions = ["accept", "edit", "reject", "no_write", "apply"]

    def get_queryset(self, request):
        return (
            super().get_queryset(request).filter(action="edit").select_related("corpus", "record")
        )

    @admin.display(description="current text (replaced)")
    def current_summary(self, obj):
        return format_html("{} ({})", obj.record.summary, admin_link(obj.record, "record"))

    @admin.display(description="proposed text")
    def proposed_summary(self, obj):
        return services.review_queue.head(obj).summary

    @admin.display(description="duplicate of")
    def duplicate_of(self, obj):
        """The live record the reviewed head candidate restates (its recorded review's
        ``duplicate_of``: ref and similarity), or "-"."""
        review = services.review_queue.head(obj).review
        duplicate = (review.document or {}).get("duplicate_of") if review else None
        if not duplicate:
            return "-"
        return f"{short_ref(duplicate['record_ref'])} ({duplicate['similarity']:.2f})"

    @admin.display(description="state")
    def queue_state(self, obj):
        current = services.review_queue.head(obj)
        if current.review is None:
            return "awaiting the reviewer"
        return f"{current.state} ({current.review.review_id[:16]}…)"

    def _decide(self, request, queryset, decision: str) -> None:
        summary = request.POST.get("edited_content_summary") or None

        def decided(item, review) -> None:
            next_step = {
                "accept": "the corpus owner applies it (Apply the accepted replacement)",
                "edit": "the revised candidate now awaits the reviewer's decision",
            }.get(review.row.effective_decision, "nothing will be written")
            self.message_user(
                request,
                f"{item.control_id}: {review.row.effective_decision} recorded as review "
                f"{review.row.review_id}; {next_step}.",
                messages.SUCCESS,
            )

        _each(
            self,
            request,
            queryset,
            lambda item: services.review_queue.decide(
                control_id=item.control_id,
                decision=decision,
                principal=_operator(request),
                edited_content_summary=summary,
            ),
            ref=lambda item: item.control_id,
            done=decided,
        )

    accept = _action("Accept the replacement (as the corpus reviewer)", _decide, "accept")
    edit = _action(
        "Edit the replacement: use the edited summary (as the corpus reviewer)", _decide, "edit"
    )
    reject = _action("Reject the replacement (as the corpus reviewer)", _decide, "reject")
    no_write = _action("Decide no_write (as the corpus reviewer)", _decide, "no_write")

    @admin.action(
        description="Apply the accepted replacement (as the corpus owner, with readback)",
        permissions=["change"],
    )
    def apply(self, request, queryset):
        def applied(item, step) -> None:
            result = review_documents.review_step(step)
            activated = result["status"] == "activated"
            outcome = (
                "exact readback verified"
                if activated
                else "not yet readable; it fails open and is retried"
            )
            self.message_user(
                request,
                f"{item.control_id}: {result['status']} as record {result.get('record_ref')} "
                f"({outcome}).",
                messages.SUCCESS if activated else messages.WARNING,
            )

        _each(
            self,
            request,
            queryset,
            lambda item: services.review_queue.apply(
                control_id=item.control_id, principal=_operator(request)
            ),
            ref=lambda item: item.control_id,
            done=applied,
        )
