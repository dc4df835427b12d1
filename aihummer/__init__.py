from aihummer.celery import app as celery_app

# The release, as pyproject.toml's `version` (a test holds them equal): the MCP server's
# `serverInfo.version`.
__version__ = "0.1.0"

__all__ = ["__version__", "celery_app"]
