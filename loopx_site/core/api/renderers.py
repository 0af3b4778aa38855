"""The API's JSON renderer: the CLI's encoding (``loopx_site.core.encoding``), so one
document is the same bytes on stdout and in a response body."""

from rest_framework.renderers import JSONRenderer

from loopx_site.core.encoding import dumps


class DocumentRenderer(JSONRenderer):
    """DRF's JSON renderer with our encoding (an ``indent`` in the Accept header still
    pretty-prints for a person reading the API by hand)."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if self.get_indent(accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        return dumps(data).encode("utf-8")
