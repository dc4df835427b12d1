"""WSGI entry for plain deployments (no MCP over HTTP there; use the ASGI entry)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aihummer.settings")

application = get_wsgi_application()
