import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
application = get_asgi_application()

from loopx_site.engines import heap  # noqa: E402

heap.freeze()  # loaded: keep the start-up heap out of later collections (engines.heap)
