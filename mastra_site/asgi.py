"""ASGI entry point: HTTP through Django, websockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mastra_site.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

application = ProtocolTypeRouter({"http": django_asgi_app})

from inbox.scheduler import NotificationSchedulerMiddleware  # noqa: E402

application = NotificationSchedulerMiddleware(application)  # in-process notification dispatch (embedded default)
