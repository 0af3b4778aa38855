"""The OpenAPI description of the whole API, decided in one place.

``LoopxAutoSchema`` (``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]``) adds to every operation:

* the error envelopes it can answer (one ``ErrorEnvelope`` component, the document
  ``DomainError.envelope()`` builds), by what the operation has: a body, path or query
  parameters, a write, a throttle scope;
* ``201`` beside ``200`` for the operations that answer 201 when a write commits;
* ``pattern: ^[^\\x00]*$`` on free strings (DRF refuses NUL characters in every one);
* one tag per Django app (``registry``, ``preferences``, …), never the URL prefix.

It also describes the host token scheme (the auth extension below).
"""

import copy

from django.apps import apps
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers


class _Scheme(OpenApiAuthenticationExtension):
    # one authentication class's security scheme: ``definition`` is published as is
    definition: dict

    def get_security_definition(self, auto_schema):
        return self.definition


class HostTokenScheme(_Scheme):
    target_class = "loopx_site.core.api.auth.HostTokenAuthentication"
    name = "hostToken"
    definition = {
        "type": "http",
        "scheme": "bearer",
        "description": "Host token from `manage.py token create --execute`, scoped to one "
        "Goal (optionally one Agent).",
    }


class SessionScheme(_Scheme):
    target_class = "loopx_site.core.api.auth.OperatorSessionAuthentication"
    name = "operatorSession"
    definition = {
        "type": "apiKey",
        "in": "cookie",
        "name": "sessionid",
        "description": "An operator's admin login; needs the `core.operate_api` "
        "permission (or a superuser). Writes also need the CSRF token.",
    }


class ErrorEnvelope(serializers.Serializer):
    """The error document of every failure (CLI exit 2 and API alike)."""

    ok = serializers.BooleanField(help_text="Always false.")
    schema_version = serializers.CharField(help_text="`<area>_error_v0`.")
    status = serializers.CharField(help_text="LoopX's status, e.g. `invalid_request`.")
    error = serializers.CharField(help_text="One-line message.")
    code = serializers.CharField(help_text="Our stable lower_snake code.")
    field = serializers.CharField(allow_null=True, help_text="The offending field, if any.")
    details = serializers.DictField(help_text="Structured detail (never secrets or paths).")


ERROR_DESCRIPTIONS = {
    "400": "Invalid request (`invalid_argument`, `invalid_json`, …).",
    "401": "No or unknown credential (`not_authenticated`).",
    "403": "Outside the credential's scope, not an operator, or CSRF failure.",
    "404": "Unknown Goal, Agent or object.",
    "409": "Revision or operation conflict.",
    "413": "Body too large (`payload_too_large`) or capacity exceeded.",
    "429": "Too many requests for this credential (`throttled`; see `Retry-After`).",
    "503": "Database or fail-closed provider unavailable.",
}

#: Operations that answer 201 (instead of 200) when an executed write commits.
CREATED_ON_COMMIT = {
    "goals_register",
    "preferences_remember",
    "preferences_retire",
    "reward_memory_candidate_review",
    "reward_memory_application_receipt",
    "hooks_todos_add",
    "hooks_turn_settle",
}

#: Tag of each app label (the app's name as operators know it).
APP_TAGS = {"core": "registry"}

WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


#: What every DRF ``CharField`` refuses (NUL characters), said in the schema.
NO_NUL_PATTERN = r"^[^\x00]*$"


class LoopxAutoSchema(AutoSchema):
    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)
        if (
            isinstance(field, serializers.CharField)
            and schema.get("type") == "string"
            and not {"pattern", "enum", "format"} & set(schema)
        ):
            schema["pattern"] = NO_NUL_PATTERN

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        operation["tags"] = [self._app_tag()]
        responses = operation["responses"]
        if operation["operationId"] in CREATED_ON_COMMIT and "200" in responses:
            responses.setdefault("201", copy.deepcopy(responses["200"]))
        for code in self._error_codes(operation):
            responses.setdefault(code, self._error_response(code))
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _app_tag(self) -> str:
        config = apps.get_containing_app_config(type(self.view).__module__)
        label = config.label if config else "api"
        return APP_TAGS.get(label, label)

    def _error_codes(self, operation) -> list[str]:
        has_body = "requestBody" in operation
        parameters = operation.get("parameters", [])
        in_path = any(p.get("in") == "path" for p in parameters)
        codes = ["401", "403", "503"]
        if has_body or parameters:
            codes.append("400")
        if has_body or in_path:
            codes.append("404")
        if self.method in WRITE_METHODS:
            codes.append("409")
        if has_body:
            codes.append("413")
        if getattr(self.view, "throttle_scope", None) and self.method in WRITE_METHODS:
            codes.append("429")  # throttles limit writes only (core.api.throttles)
        return codes

    def _error_response(self, code: str) -> dict:
        response = self._get_response_for_code(ErrorEnvelope, code)
        response["description"] = ERROR_DESCRIPTIONS[code]
        if code == "429":
            response["headers"] = {
                "Retry-After": {
                    "schema": {"type": "integer"},
                    "description": "Seconds until this credential may call again.",
                }
            }
        return response


class _StrictInputSchema(OpenApiSerializerExtension):
    """Every ``StrictInput`` body is ``additionalProperties: false`` in the schema: the
    API refuses a field it does not take (``invalid_argument``), and the schema says so."""

    target_class = "loopx_site.core.api.serializers.StrictInput"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema
