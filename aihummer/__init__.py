import gc

# Loading the project makes about a million objects that live as long as the process;
# with the default thresholds the cyclic collector runs some 250 times meanwhile, each
# pass scanning them again (15 % of `django.setup()`, 0.13 s). It runs rarely from here
# until the apps are ready (AiHummerConfig.ready calls `loaded`), then as usual again.
_RUNTIME_GC_THRESHOLDS = gc.get_threshold()


def loading() -> None:
    """Long-lived objects are being made: collect garbage rarely until `loaded()`."""
    gc.set_threshold(50_000, 20, 10)


def loaded() -> None:
    """The garbage collector's usual thresholds again."""
    gc.set_threshold(*_RUNTIME_GC_THRESHOLDS)


loading()

from aihummer.celery import app as celery_app  # noqa: E402  (after `loading()`: it loads the most)

# The release, as pyproject.toml's `version` (a test holds them equal): the MCP server's
# `serverInfo.version`.
__version__ = "0.1.0"

__all__ = ["__version__", "celery_app"]
