"""Pointing the one Celery app at a test's own broker, and back."""

from __future__ import annotations

from aihummer.celery import app


def point_app_at(url: str | None) -> None:
    """Publish to and consume from `url` (None: no broker) from now on."""
    app.close()  # drop the connection pool built for the previous broker URL
    # close() keeps the producer pool (Celery 5.7): tasks would still go to the old broker.
    app.amqp._producer_pool = None
    app.conf.broker_url = url
