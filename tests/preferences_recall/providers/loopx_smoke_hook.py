"""The provider of LoopX's ``examples/semantic-preference-hook-smoke.py``, behaviour for
behaviour: it reads the request from stdin and returns one item derived from the surface
(``memory://<surface>`` / ``prefer <surface>``), nothing else."""

import json
import sys

surface = json.load(sys.stdin)["surface"]
response = {
    "schema_version": "semantic_preference_provider_response_v0",
    "items": [{"preference_ref": "memory://" + surface, "summary": "prefer " + surface}],
}
json.dump(response, sys.stdout)
