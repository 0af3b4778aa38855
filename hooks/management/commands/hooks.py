from hooks import documents, executors, selectors, services
from hooks.errors import AREA, FAILURE_CODES
from hooks.models import HookDispatch, HookIntent
from loopx_site.core import access
from loopx_site.core.cli import LoopxCommand, call_with_options, format_mapping, format_table


class Command(LoopxCommand):
    help = (
        "Post-writeback capability hooks: installed registrations, the dispatch journal, "
        "the intent outbox, crash-recovery replay and the governed executor."
    )
    error_area = AREA

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        sub.add("registrations", "Installed hook registrations and their validation status.")

        dispatches = _listing(sub, "dispatches", "The sidecar dispatch journal, newest first.")
        dispatches.add_argument("--status", choices=HookDispatch.Status.values)
        dispatches.add_argument("--failure-code", choices=FAILURE_CODES)
        dispatches.add_argument("--receipt-id")
        dispatches.add_argument("--hook-id")

        intents = _listing(sub, "intents", "The intent outbox, newest first.")
        intents.add_argument("--status", choices=HookIntent.Status.values)
        intents.add_argument("--intent-kind")

        replay = sub.add(
            "replay",
            "Recover the hook phase of committed receipts that have no sidecar checkpoint "
            "(and retry failed dispatches with attempts left). Preview unless --execute.",
        )
        replay.add_argument("--goal-id")
        replay.add_argument("--receipt-id")
        replay.add_argument("--limit", type=int, default=100)
        replay.add_argument(
            "--no-retry-failed", dest="retry_failed", action="store_false", default=True
        )
        replay.add_argument("--execute", action="store_true")

        execute = sub.add(
            "execute-intents",
            "Admit pending intents through a governed executor and record its decision "
            "(no network or sink call). Preview unless --execute.",
        )
        execute.add_argument("--executor", required=True, choices=sorted(executors.EXECUTORS))
        execute.add_argument("--goal-id")
        execute.add_argument("--intent-id", action="append", dest="intent_ids")
        execute.add_argument("--limit", type=int)
        execute.add_argument("--execute", action="store_true")

    def run_registrations(self, **_):
        return documents.registration_list(selectors.registrations(operator=True))

    def run_dispatches(self, **options):
        return documents.dispatch_list(_journal(selectors.list_dispatches, options))

    def run_intents(self, **options):
        return documents.intent_list(_journal(selectors.list_intents, options))

    def run_replay(self, **options):
        return call_with_options(services.replay, options)

    def run_execute_intents(self, **options):
        return call_with_options(services.execute_intents, options)

    def render_text(self, payload, *, subcommand=None):
        if subcommand == "registrations":
            return format_table(
                payload["registrations"],
                ["hook_id", "capability_id", "status", "admitted_by_profile", "reason"],
            )
        if subcommand == "dispatches":
            return format_table(
                payload["dispatches"],
                [
                    "dispatch_id",
                    "hook_id",
                    "receipt_id",
                    "status",
                    "failure_code",
                    "conflict_code",
                    "attempts",
                ],
            )
        if subcommand == "intents":
            rows = [{**i, "status": i["outbox"]["status"]} for i in payload["intents"]]
            return format_table(rows, ["intent_id", "intent_kind", "operation", "status"])
        if subcommand == "replay":
            rows = [
                {**r, "dispatches": len(r.get("dispatches", r.get("planned_dispatch_ids", [])))}
                for r in payload["receipts"]
            ]
            return format_table(rows, ["receipt_id", "reason", "phase_status", "dispatches"])
        if subcommand == "execute-intents":
            rows = [
                {**d, "decision": (d["decision"] or {}).get("decision")}
                for d in payload["decisions"]
            ]
            head = format_mapping(payload, skip=("decisions",))
            return head + "\n\n" + format_table(rows, ["intent_id", "action", "reason", "decision"])
        return format_mapping(payload)


def _listing(sub, name: str, help: str):
    """A journal listing's subcommand: ``--goal-id``, ``--limit`` and ``--after-cursor``
    (the API's ``goal_id``, ``limit`` and ``cursor``)."""
    listing = sub.add(name, help)
    listing.add_argument("--goal-id")
    listing.add_argument("--limit", type=int, default=100)
    listing.add_argument("--after-cursor", type=int, dest="cursor")
    return listing


def _journal(select, options):
    """A journal listing from the operator's shell (``access``: the one scope rule)."""
    goal_ids, agent_id = access.shell_operator().listing_scope(options["goal_id"], area=AREA)
    return call_with_options(select, options, goal_ids=goal_ids, agent_id=agent_id)
