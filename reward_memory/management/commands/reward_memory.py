"""``manage.py reward_memory …`` — thin adapters over ``reward_memory.services``."""

from loopx_site.core import access
from loopx_site.core.cli import (
    LoopxCommand,
    add_agent_arguments,
    add_execute_argument,
    call_with_options,
    format_mapping,
    format_table,
)
from reward_memory import contracts, principals, routing, selectors, services
from reward_memory.documents import authority as authority_documents
from reward_memory.documents import corpora as corpus_documents
from reward_memory.documents import registry
from reward_memory.documents import review as review_documents
from reward_memory.domain import validation
from reward_memory.domain.inputs import CASES, read_case, read_case_review, read_json
from reward_memory.errors import AREA
from reward_memory.management import corpus_ranking, embed_backfill, relevance_eval

DEFAULT_CASE = "issue-fix-verified-contributor"


def _operator_actor(parser) -> None:
    """``--actor`` (required): the operator account a write is attributed to."""
    parser.add_argument("--actor", required=True, help="Operator account (user:<name>).")


class Command(LoopxCommand):
    help = "Reward Memory: corpora, candidate review, ingest, recall and receipts."
    error_area = AREA

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        sub.add("architecture", "Print the machine-readable Reward Memory contract.")
        relevance_eval.add(sub)
        embed_backfill.add(sub)
        corpus_ranking.add(sub)

        corpora = sub.add("corpora", "List registered corpora with their five health states.")
        corpora.add_argument("--corpus-id", help="Only this corpus.")

        register = sub.add(
            "register-corpus",
            "Register or update a corpus and its standing policies (preview by default).",
        )
        register.add_argument(
            "--input",
            required=True,
            help='JSON file (or -): {"corpus": {...}, "standing_policy": {...}} '
            'or {"corpora": [...]}.',
        )
        register.add_argument("--expected-revision", type=int)
        add_execute_argument(register)

        review = sub.add(
            "candidate-review", "Review one candidate: accept|edit|reject|retire|no_write."
        )
        source = review.add_mutually_exclusive_group()
        source.add_argument("--input", help="Candidate (or adapter input / review wrapper) JSON.")
        source.add_argument(
            "--case",
            choices=sorted(CASES),
            help=f"A shipped public fixture (default: {DEFAULT_CASE}).",
        )
        review.add_argument("--decision", default="accept", choices=contracts.DECISIONS)
        review.add_argument(
            "--reviewer", help="The operator account recording the review (user:<name>)."
        )
        review.add_argument("--corpus-id")
        review.add_argument("--record-ref", help="The active record a retire decision closes.")
        review.add_argument(
            "--distinct",
            action="store_true",
            help="The candidate is distinct from the record it is marked duplicate_of: "
            "accepting it activates a record of its own instead of adding its evidence.",
        )
        add_execute_argument(review, "Record the review.")

        apply = sub.add(
            "apply-review",
            "Perform an accepted/retire review's next step with the corpus owner's authority.",
        )
        apply.add_argument("--review-id", required=True)
        apply.add_argument(
            "--actor", required=True, help="The operator account acting (user:<name>)."
        )
        add_execute_argument(apply)

        checkpoint = sub.add(
            "checkpoint",
            "Operator-verified authority checkpoints: grant | revoke | list (preview by default).",
        )
        checkpoint.add_argument("action", choices=["grant", "revoke", "list"])
        checkpoint.add_argument("--checkpoint-id")
        checkpoint.add_argument("--project")
        checkpoint.add_argument("--subject", help="The verified actor ref, e.g. user:maint-1.")
        checkpoint.add_argument("--role", help="The verified role, e.g. core_contributor.")
        checkpoint.add_argument("--action-scope", action="append", dest="action_scopes", default=[])
        checkpoint.add_argument("--expires-at", help="UTC timestamp (optional).")
        checkpoint.add_argument("--evidence-ref", default="")
        checkpoint.add_argument("--reason", default="")
        checkpoint.add_argument(
            "--actor", help="The operator account granting/revoking (user:<name>)."
        )
        add_execute_argument(checkpoint)

        for name, text in (
            ("revoke-record", "Revoke an active record (authority source or owner)."),
            ("supersede-record", "Supersede an active record by another (owner)."),
            ("retire-record", "Retire an active record (retirement authority or owner)."),
        ):
            op = sub.add(name, text)
            op.add_argument("--record-ref", required=True)
            _operator_actor(op)
            if name == "revoke-record":
                op.add_argument("--revocation-ref", required=True)
            if name == "supersede-record":
                op.add_argument("--by-record-ref", required=True)
            if name == "retire-record":
                op.add_argument("--reason-summary")
            add_execute_argument(op)

        control = sub.add(
            "operator-control",
            "Prepare an authorised edit or retire decision for an active record (no provider "
            "write; --execute stores it for dogfood).",
        )
        control.add_argument("--input", required=True, help="The record (JSON with record_ref).")
        control.add_argument("--action", required=True, choices=["edit", "retire"])
        control.add_argument("--control-ref", required=True, help="The operator checkpoint id.")
        control.add_argument("--reasoning-summary", required=True)
        control.add_argument("--edited-content-summary")
        _operator_actor(control)
        add_execute_argument(control, "Store the decision (still no provider write).")

        route = sub.add(
            "route-check", "Route an issue-fix observation to pilot, meta or evidence hold."
        )
        route.add_argument("--case", choices=sorted(routing.CASES), help="A shipped case.")
        route.add_argument(
            "--behavior-status", choices=list(routing.BEHAVIOR_STATUSES), default="bug_confirmed"
        )
        route.add_argument("--surface-count", type=int, default=1)
        route.add_argument(
            "--edge-case-complexity", choices=list(routing.COMPLEXITIES), default="low"
        )
        for flag in routing.FLAGS:
            route.add_argument(f"--{flag.replace('_', '-')}", action="store_true")

        mark = sub.add(
            "mark-experience",
            "New source truth marks a procedural_experience stale|quarantined|refuted.",
        )
        mark.add_argument("--record-ref", required=True)
        mark.add_argument("--state", required=True, choices=list(contracts.EXPERIENCE_MARKS))
        mark.add_argument("--source-truth-ref", required=True)
        _operator_actor(mark)
        add_execute_argument(mark)

        validate = sub.add(
            "reflection-validate",
            "Record a reflection candidate's validation by hand (passed | failed), attributed "
            "to the --actor operator account; a pass on a settled Turn finalises it.",
        )
        validate.add_argument("--goal-id", required=True)
        validate.add_argument("--agent-id", required=True)
        validate.add_argument("--reflection-digest", required=True)
        validate.add_argument("--status", required=True, choices=["passed", "failed"])
        validate.add_argument("--evidence-ref", help="Opaque ref of what the operator checked.")
        _operator_actor(validate)
        add_execute_argument(validate)

        reopen = sub.add(
            "reopen", "Reopen a rejected/retired/revoked candidate lineage (operator only)."
        )
        reopen.add_argument("--corpus-id", required=True)
        reopen.add_argument("--candidate-ref", required=True)
        _operator_actor(reopen)
        add_execute_argument(reopen)

        ingest = sub.add("ingest-event", "Ingest one compact event (planned by default).")
        add_agent_arguments(ingest, required=False)
        ingest.add_argument("--input", required=True, help="Compact event JSON file (or -).")
        add_execute_argument(ingest)
        ingest.add_argument(
            "--actor",
            help="Operator account (user:<name>) submitting the event: binds itself as the "
            "source role operator; without it only checkpoints bind the source actor.",
        )

        reconcile = sub.add(
            "reconcile-ingest", "Retry this Agent's pending ingest sidecars (exact readback)."
        )
        add_agent_arguments(reconcile)

        recall = sub.add("recall", "Guarded recall for one corpus and surface.")
        recall.add_argument("--input", required=True, help="reward_memory_recall_request_v0 JSON.")
        add_agent_arguments(
            recall,
            required=False,
            goal_help="The Agent's Goal (LoopX request packets).",
            agent_help="The Agent (LoopX request packets).",
        )
        add_execute_argument(recall)

        application = sub.add("application-receipt", "Record how a recall's memory was applied.")
        application.add_argument("--input", required=True, help="reward_memory_application_v0.")
        add_execute_argument(application)

        expire = sub.add("expire-records", "Close active records whose expiry has passed.")
        expire.add_argument("--corpus-id")
        add_execute_argument(expire)

        hook = sub.add(
            "hook",
            "Run the automatic Reward Memory hook at a declared module boundary "
            "(planned unless --execute).",
        )
        hook.add_argument("--boundary", required=True, choices=list(services.DECLARED_BOUNDARIES))
        add_agent_arguments(hook)
        hook.add_argument("--query", action="append", dest="queries", default=[])
        hook.add_argument("--event", help="A compact event JSON file to ingest (or -).")
        add_execute_argument(hook)

        sub.add(
            "evaluate",
            "Stage 4: run the eight contract cases on the real code; release gate (progress "
            "on stderr).",
        )

        dogfood = sub.add(
            "dogfood-evaluate",
            "Stage 5: dogfood receipts v1, batch readiness and utility observations (no write).",
        )
        dogfood.add_argument("--input", required=True, help="Compact observations JSON (or -).")

        status = sub.add("experiment-status", "The Agent's Reward Memory experiment status.")
        add_agent_arguments(status)

    # -- handlers -------------------------------------------------------------------------
    def run_architecture(self, **_):
        return contracts.architecture()

    def run_corpora(self, *, corpus_id=None, **_):
        rows = [selectors.get_corpus(corpus_id)] if corpus_id else selectors.list_corpora()
        return corpus_documents.corpus_list(rows)

    def run_register_corpus(self, *, input, expected_revision=None, execute=False, **_):
        return services.register_corpora(
            read_json(input), expected_revision=expected_revision, execute=execute
        )

    def run_candidate_review(
        self,
        *,
        input=None,
        case=None,
        decision,
        reviewer=None,
        corpus_id=None,
        record_ref=None,
        execute=False,
        distinct=False,
        **_,
    ):
        if input is None and case is None:
            case = DEFAULT_CASE
        document = read_case(case) if case else read_json(input)
        fixture = read_case_review(decision) if case else None
        edit = fixture["edit"] if (fixture and decision == "edit") else None
        # a shipped case's preview shows LoopX's fixture review (labels, no authority)
        preview_review = fixture["review"] if (fixture and not execute and not reviewer) else None
        if "candidate" in document and "schema_version" not in document:
            edit = document.get("edit")
            reviewer = reviewer or document.get("reviewer")
            corpus_id = corpus_id or document.get("corpus_id")
            record_ref = record_ref or document.get("record_ref")
            distinct = distinct or document.get("distinct") is True
            document = document["candidate"]
        principal = None
        if reviewer is not None or execute:
            principal = principals.operator_account(
                reviewer, field="reviewer", code="reviewer_not_authorized"
            )
        return services.review_candidate(
            candidate=document, decision=decision, principal=principal, corpus_id=corpus_id,
            edit=edit, record_ref=record_ref, execute=execute, preview_review=preview_review,
            distinct=distinct,
        )  # fmt: skip

    def run_apply_review(self, *, review_id, actor, execute=False, **_):
        principal = principals.operator_account(actor, field="actor", code="owner_not_authorized")
        return services.apply_review(review_id=review_id, principal=principal, execute=execute)

    def run_checkpoint(self, *, action, execute=False, **options):
        if action == "list":
            rows = selectors.list_checkpoints(project=options.get("project"))
            return authority_documents.checkpoint_list(rows)
        operator = principals.operator_account(
            options.get("actor"), field="actor", code="operator_required"
        )
        checkpoint_id = validation.checkpoint_id(options.get("checkpoint_id"))
        if action == "revoke":
            return services.revoke_checkpoint(
                checkpoint_id=checkpoint_id,
                operator=operator,
                reason=options.get("reason") or "",
                execute=execute,
            )
        expires_at = validation.timestamp(options.get("expires_at"), "expires_at", required=False)
        return services.grant_checkpoint(
            checkpoint_id=checkpoint_id,
            project=options.get("project"),
            actor=options.get("subject"),
            role=options.get("role"),
            action_scopes=options.get("action_scopes") or [],
            operator=operator,
            expires_at=expires_at,
            evidence_ref=options.get("evidence_ref") or "",
            execute=execute,
        )

    def _record_operation(self, operation, *, record_ref, actor, execute, **arguments):
        return services.record_operation(
            operation,
            record_ref=record_ref,
            principal=principals.operator_account(actor, field="actor"),
            execute=execute,
            **arguments,
        )

    def run_revoke_record(self, *, record_ref, actor, revocation_ref, execute=False, **_):
        return self._record_operation(
            "revoke", record_ref=record_ref, actor=actor, execute=execute,
            revocation_ref=revocation_ref,
        )  # fmt: skip

    def run_supersede_record(self, *, record_ref, actor, by_record_ref, execute=False, **_):
        return self._record_operation(
            "supersede", record_ref=record_ref, actor=actor, execute=execute,
            by_record_ref=by_record_ref,
        )  # fmt: skip

    def run_retire_record(self, *, record_ref, actor, reason_summary=None, execute=False, **_):
        return self._record_operation(
            "retire", record_ref=record_ref, actor=actor, execute=execute,
            reason_summary=reason_summary,
        )  # fmt: skip

    def run_route_check(self, *, case=None, **options):
        if case is not None:
            return routing.route(routing.CASES[case])
        observation = {
            "behavior_status": options.get("behavior_status"),
            "surface_count": options.get("surface_count"),
            "edge_case_complexity": options.get("edge_case_complexity"),
            **{flag: bool(options.get(flag)) for flag in routing.FLAGS},
        }
        return routing.route(observation)

    def run_operator_control(self, *, input, actor, **options):
        principal = principals.operator_account(actor, field="actor", code="operator_required")
        record_ref = validation.ref(read_json(input).get("record_ref"), "record_ref")
        return call_with_options(
            services.operator_control, options, record_ref=record_ref, principal=principal
        )

    def run_mark_experience(
        self, *, record_ref, state, source_truth_ref, actor, execute=False, **_
    ):
        return self._record_operation(
            "mark", record_ref=record_ref, actor=actor, execute=execute,
            state=state, source_truth_ref=source_truth_ref,
        )  # fmt: skip

    def run_reflection_validate(self, *, actor, **options):
        principal = principals.operator_account(actor, field="actor", code="operator_required")
        return call_with_options(services.record_validation, options, principal=principal)

    def run_reopen(self, *, corpus_id, candidate_ref, actor, execute=False, **_):
        operator = principals.operator_account(actor, field="actor", code="operator_required")
        return services.reopen_lineage(
            corpus_id=corpus_id, candidate_ref=candidate_ref, operator=operator, execute=execute
        )

    def run_ingest_event(
        self, *, input, goal_id=None, agent_id=None, execute=False, actor=None, **_
    ):
        principal = principals.operator_account(actor, field="actor") if actor else None
        if goal_id and agent_id:  # the operator's shell, through the same resolver as the API
            acting = access.shell_operator().acting_for(goal_id, agent_id, area=AREA)
            goal_id, agent_id = acting.goal_id, acting.agent_id
        return services.submit_event(
            document=read_json(input), goal_id=goal_id, agent_id=agent_id, execute=execute,
            principal=principal,
        )  # fmt: skip

    def run_reconcile_ingest(self, *, goal_id, agent_id, **_):
        return services.reconcile_pending_ingests(goal_id=goal_id, agent_id=agent_id)

    def run_recall(self, *, input, execute=False, goal_id=None, agent_id=None, **_):
        viewer = None
        if goal_id is not None or agent_id is not None:
            # the operator's shell, through the same resolver as the API
            acting = access.shell_operator().acting_for(goal_id, agent_id, area=AREA)
            goal_id, agent_id, viewer = acting.goal_id, acting.agent_id, acting.viewer
        return services.recall(
            request=read_json(input), execute=execute, goal_id=goal_id, agent_id=agent_id,
            viewer=viewer,
        )  # fmt: skip

    def run_application_receipt(self, *, input, execute=False, **_):
        return services.record_application(document=read_json(input), execute=execute)

    def run_expire_records(self, *, corpus_id=None, execute=False, **_):
        return services.expire_due_records(corpus_id=corpus_id, execute=execute)

    def run_hook(self, *, goal_id, agent_id, event=None, **options):
        acting = access.shell_operator().acting_for(goal_id, agent_id, area=AREA)
        return call_with_options(
            services.run_boundary_hook, options, goal_id=acting.goal_id,
            agent_id=acting.agent_id, viewer=acting.viewer,
            event=read_json(event) if event else None,
        )  # fmt: skip

    def run_evaluate(self, **_):
        from reward_memory import evaluation

        return evaluation.evaluate(progress=self.progress)

    def run_dogfood_evaluate(self, *, input, **_):
        from reward_memory import dogfood

        document = read_json(input)
        self.progress("running the Stage 4 gate for the batch readiness")
        return dogfood.evaluate_batch(document)

    def exit_status(self, payload, *, subcommand=None):
        # LoopX's dogfood-evaluate exits 2 on a batch that is not ready (``ok: false``)
        return 2 if subcommand == "dogfood-evaluate" and payload.get("ok") is False else 0

    def run_experiment_status(self, *, goal_id, agent_id, **_):
        return services.experiment_status(goal_id=goal_id, agent_id=agent_id)

    # -- text output ------------------------------------------------------------------------
    def render_text(self, payload, *, subcommand=None):
        if subcommand == "corpora":
            rows = [
                {
                    "corpus_id": c["corpus_id"],
                    "class": c["memory_class"],
                    "project": c["project"],
                    "surfaces": ",".join(c["surfaces"]),
                    "provider": c["provider"]["provider_id"],
                    "health": registry.health_summary({"health": c["health"]}),
                }
                for c in payload["corpora"]
            ]
            return format_table(
                rows, ["corpus_id", "class", "project", "surfaces", "provider", "health"]
            )
        if subcommand == "evaluate":
            rows = [
                {"case": c["case_id"], "passed": c["passed"], "ms": c["latency_ms"]}
                for c in payload["cases"]
            ]
            gate = payload["release_gate"]
            head = f"status: {payload['status']}\nrelease_gate: {gate['status']}"
            return f"{head}\n" + format_table(rows, ["case", "passed", "ms"])
        if subcommand == "dogfood-evaluate":
            head = format_mapping(
                payload,
                skip=(
                    "receipts",
                    "operator_controls",
                    "operator_control_records",
                    "metrics",
                    "boundaries",
                    "reason_codes",
                ),
            )
            rows = [
                {"domain": r["domain_id"], "disposition": r["application_disposition"],
                 "utility": (r["utility_observation"] or {}).get("label", "-")}
                for r in payload["receipts"]
            ]  # fmt: skip
            reasons = ", ".join(payload["reason_codes"]) or "-"
            return f"{head}\nreasons: {reasons}\n" + format_table(
                rows, ["domain", "disposition", "utility"]
            )
        if subcommand == "hook":
            head = format_mapping(payload, skip=("context", "application_receipt", "automation"))
            rows = payload["context"]["guidance"]
            return f"{head}\n" + format_table(rows, ["memory_class", "summary"])
        if subcommand == "recall":
            head = format_mapping(payload, skip=("items", "public_packet", "guard"))
            rows = [
                {"class": i["memory_class"], "confidence": i["confidence"], "summary": i["summary"]}
                for i in payload.get("items", [])
            ]
            reasons = ", ".join(r["code"] for r in payload["guard"]["reasons"]) or "-"
            table = format_table(rows, ["class", "confidence", "summary"])
            return f"{head}\nguard: {reasons}\n{table}"
        if isinstance(payload.get("guard"), dict):
            head = format_mapping(
                payload, skip=("guard", "candidate", "revised_candidate", "duplicate_of")
            )
            reasons = ", ".join(
                f"{r['code']}({r['field']})" for r in payload["guard"].get("reasons", [])
            )
            guard = f"{head}\nguard: {payload['guard'].get('status')} {reasons}".rstrip()
            return guard + review_documents.duplicate_text(payload.get("duplicate_of"))
        return format_mapping(payload)
