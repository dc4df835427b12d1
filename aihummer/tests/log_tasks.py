"""A task for the logging tests, registered on the app when the test imports it."""

import logging

from celery import shared_task


@shared_task(name="aihummer.tests.log_a_line")
def log_a_line() -> None:
    logging.getLogger("aihummer.tests").warning("a line from a task")
