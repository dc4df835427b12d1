"""ASGI entry: `uvicorn aihummer.asgi:application` serves the admin and the API."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aihummer.settings")

application = get_asgi_application()
