"""Preflight and canary of the ``openviking`` provider for one Goal-scoped Agent.

``python scripts/openviking_canary.py --goal-id demo --agent-id author`` reads the
``OPENVIKING_*`` settings, derives the Agent's actor peer, checks ``/health`` (server
≥ 0.4.19), then makes a fresh, non-recallable canary write under
``viking://user/{user}/peers/{peer}/memories/reward_memory/…`` and reads the bytes back —
the provider half of what ``configure_goal --execute`` needs. Prints one JSON object with
digests only (no URL, key, user or scope ref); exit 0 when the canary verified, else 1.
"""

import argparse
import json
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")


def main() -> int:
    import django

    django.setup()
    from django.conf import settings

    import loopx_site.openviking_http as ov
    from loopx_site.core.canonical import digest_ref
    from reward_memory import providers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--agent-id", required=True)
    args = parser.parse_args()
    provider = providers.get("openviking")
    peer = provider.actor_peer_for(args.goal_id, args.agent_id)
    scope = f"{ov.peer_memory_root(settings.OPENVIKING_USER_ID or 'unset', peer)}/reward_memory"
    binding = providers.Binding(provider_id="openviking", scope_ref=scope, actor_peer_id=peer)
    report = provider.preflight_report(binding)
    result = {
        "schema_version": "loopx_openviking_canary_v0",
        "goal_id": args.goal_id,
        "agent_id": args.agent_id,
        "actor_peer_digest": digest_ref(peer),
        "binding_ref": binding.binding_ref,
        "preflight": {
            "status": report.status,
            "failure_kind": report.failure_kind,
            "server_version": report.server_version,
        },
        "canary": None,
    }
    if report.status == "ready":
        try:
            canary = provider.canary(binding, canary_ref=f"canary-{uuid.uuid4().hex}")
            result["canary"] = {
                "written": canary.written,
                "readback_verified": canary.readback_verified,
                "resource_ref_digest": canary.resource_ref_digest,
            }
        except providers.ProviderUnavailable as exc:
            result["canary"] = {"written": False, "readback_verified": False, "failure": exc.kind}
    print(json.dumps(result, indent=2))
    return 0 if (result["canary"] or {}).get("readback_verified") else 1


if __name__ == "__main__":
    sys.exit(main())
