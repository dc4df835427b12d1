"""Issue 34: one log format (time, level, logger, request/task/run ids, workspace),
JSON lines on demand, and each request's answer logged once."""

from __future__ import annotations

import io
import json
import logging
import re
import time

import pytest

from aihummer import logging as logs
from aihummer.actors import Actor
from aihummer.services import api_key_create
from aihummer.tests.log_tasks import log_a_line

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (?P<level>[A-Z]+) (?P<logger>\S+) (?P<rest>.*)$")


class Captured:
    """The console handler of settings.LOGGING (its filters, one formatter) on a buffer."""

    def __init__(self, formatter: logging.Formatter) -> None:
        self.buffer = io.StringIO()
        self.handler = logging.StreamHandler(self.buffer)
        self.handler.addFilter(logs.ContextFilter())
        self.handler.setFormatter(formatter)

    def __enter__(self) -> Captured:
        logging.getLogger().addHandler(self.handler)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self.handler)

    def lines(self) -> list[str]:
        return self.buffer.getvalue().splitlines()


@pytest.fixture
def raw_key(workspace, ada):
    _, raw = api_key_create(workspace=workspace, name="ci", scopes="read", actor=Actor.for_user(ada))
    return raw


def test_a_request_line_has_time_level_logger_request_id_and_workspace(client, raw_key):
    with Captured(logs.TextFormatter()) as captured:
        response = client.get(
            "/v1/admin/agents/missing", headers={"Authorization": f"Bearer {raw_key}", "X-Request-Id": "req-34"}
        )

    assert response.status_code == 404
    [line] = [line for line in captured.lines() if "req-34" in line]
    match = TEXT_LINE.match(line)
    assert match is not None, line
    assert (match["level"], match["logger"]) == ("WARNING", "aihummer.request")
    assert re.fullmatch(
        r"\[request_id=req-34 workspace=acme\] GET /v1/admin/agents/missing 404 \d+\.\d ms", match["rest"]
    )


def test_a_4xx_is_logged_once_not_also_by_django(client, db):
    with Captured(logs.TextFormatter()) as captured:
        client.get("/no/such/page", headers={"X-Request-Id": "once"})
        client.get("/v1/admin/agents", headers={"X-Request-Id": "twice-not"})

    assert len([line for line in captured.lines() if "request_id=once" in line]) == 1
    assert len([line for line in captured.lines() if "request_id=twice-not" in line]) == 1
    assert not [line for line in captured.lines() if "Not Found" in line or "Unauthorized" in line]


def test_json_lines_carry_the_same_fields(client, raw_key):
    with Captured(logs.JsonFormatter()) as captured:
        client.get("/v1/admin/agents?limit=1", headers={"Authorization": f"Bearer {raw_key}", "X-Request-Id": "j-1"})

    [record] = [json.loads(line) for line in captured.lines() if '"j-1"' in line]
    assert set(record) == {
        "time",
        "level",
        "logger",
        "message",
        "request_id",
        "workspace",
        "method",
        "path",
        "route",
        "status",
        "duration_ms",
    }
    assert record | {"time": "", "message": "", "duration_ms": 0} == {
        "time": "",
        "level": "INFO",
        "logger": "aihummer.request",
        "message": "",
        "request_id": "j-1",
        "workspace": "acme",
        "method": "GET",
        "path": "/v1/admin/agents",
        "route": "v1:agent-list",
        "status": 200,
        "duration_ms": 0,
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["time"])


def test_a_path_cannot_forge_a_second_line(client, db):
    with Captured(logs.TextFormatter()) as captured:
        client.get("/x%0A2026-01-01T00:00:00.000Z INFO forged", headers={"X-Request-Id": "forge"})

    [line] = [line for line in captured.lines() if "forge" in line]
    assert "/x\\x0a2026-01-01T00:00:00.000Z INFO forged 404" in line
    assert not any(line.startswith("2026-01-01") for line in captured.lines())


def test_exceptions_and_context_in_json(db):
    formatter = logs.JsonFormatter()
    with Captured(formatter) as captured, logs.log_context(task_id="t-1", run_id="r-1"):
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("aihummer.tests").exception("It failed")

    [record] = [json.loads(line) for line in captured.lines()]
    assert (record["message"], record["task_id"], record["run_id"]) == ("It failed", "t-1", "r-1")
    assert "request_id" not in record
    assert record["exception"].startswith("Traceback") and "ValueError: boom" in record["exception"]


@pytest.mark.django_db(transaction=True)
def test_a_task_logs_with_its_task_id_on_a_real_worker(worker_on_redis):
    with Captured(logs.TextFormatter()) as captured:
        result = log_a_line.delay()
        for _ in range(200):
            if any("a line from a task" in line for line in captured.lines()):
                break
            time.sleep(0.05)

    [line] = [line for line in captured.lines() if "a line from a task" in line]
    assert f"[task_id={result.id}] a line from a task" in line
