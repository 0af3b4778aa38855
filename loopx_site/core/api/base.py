"""The base of every LoopX API view: parse the input, call one service, answer one
document (rendered by the app's ``documents`` module, encoded by
``loopx_site.core.encoding`` like the CLI's stdout)."""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core import access


class DocumentApi(APIView):
    #: Area of errors raised before a service runs (the error envelope's schema name).
    error_area = "loopx"

    def caller(self, request) -> access.Caller:
        """Who is calling (``loopx_site.core.access``: the one resolver)."""
        return access.from_request(request, area=self.error_area)

    @staticmethod
    def parse(serializer_class, data) -> dict[str, Any]:
        """The validated input of ``serializer_class`` (a DRF ``ValidationError`` becomes
        the error envelope)."""
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    @staticmethod
    def document(document: dict[str, Any], *, created: bool = False) -> Response:
        """One document: 201 when the call created what it names, else 200."""
        return Response(document, status=201 if created else 200)
