"""Routes of the semantic preference recall hook (``/api/v1/semantic-preferences/…``)."""

urlpatterns: list = []
