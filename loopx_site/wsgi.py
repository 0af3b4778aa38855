import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
application = get_wsgi_application()

# Import the URLconf (views, serializers, admin registrations) now, in the master when
# gunicorn preloads, rather than in the first request of every worker.
from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018

# Everything a request needs is loaded: keep it out of every later collection
# (``loopx_site.engines.heap``).
from loopx_site.engines import heap  # noqa: E402

heap.freeze()
