"""OpenAPI description of the host token scheme (imported by the URLconf)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class HostTokenScheme(OpenApiAuthenticationExtension):
    target_class = "loopx_site.core.api.auth.HostTokenAuthentication"
    name = "hostToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Host token from `manage.py token create`, scoped to one Goal "
            "(optionally one Agent).",
        }
