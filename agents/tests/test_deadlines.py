"""Wall-clock limits: a model call ends within its `timeout_seconds`, retries included,
through each vendor's SDK against a local server slower than the limit, with the SDKs'
retries on (they retry timeouts and 5xx, each attempt with a fresh timeout, unless
told the time that is left)."""

from __future__ import annotations

import functools
import json
import time

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request

from agents.models import Agent, AgentTurn, DebugLog
from agents.runtime import agent_turn_run
from agents.runtime.preset_check import preset_check
from agents.runtime.providers import get_provider
from agents.runtime.providers.base import Message, ModelRequest, ProviderError
from agents.runtime.providers.deadline import Deadline, DeadlineExceeded, retry_until
from agents.services import agent_create
from agents.tests.helpers import settled, sleeping
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset

SECRET = "sk-test-0123456789abcdefghijklmnop"
LIMIT = 1.0
# What a call may take beyond its limit: the SDK's bookkeeping and thread switches on a
# loaded machine (0.25 s was exceeded at a load of 14 on 2 cores). Still below what a
# failure would cost: a retry after the time is up adds a whole attempt (≥ LIMIT), and a
# limit not enforced waits for the server, SLOWER_THAN_LIMIT > LIMIT + MARGIN.
MARGIN = 0.6
SLOWER_THAN_LIMIT = 2.0
VENDORS = {
    "openai": ("/v1", "/v1/chat/completions", "gpt-4.1"),
    "anthropic": ("/", "/v1/messages", "claude-haiku-4-5"),
    "gemini": ("/", "/v1/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash"),
}


@pytest.fixture
def retries_on(settings) -> int:
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 2
    return 2


def request_for(server: HTTPServer, vendor: str, timeout: float) -> ModelRequest:
    base, _, model = VENDORS[vendor]
    return ModelRequest(
        model=model,
        system_prefix="You are terse.",
        system_volatile="",
        messages=(Message(role="user", content="Hello"),),
        timeout_seconds=timeout,
        base_url=server.url_for(base),
        api_key=SECRET,
    )


def timed_failure(vendor: str, request: ModelRequest) -> tuple[ProviderError, float]:
    provider = get_provider(vendor)  # imports the SDK: not part of any call
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        provider.complete(request)
    return caught.value, time.monotonic() - started


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_server_slower_than_the_limit_times_out_within_it(httpserver, retries_on, vendor):
    seen: list[Request] = []
    httpserver.expect_request(VENDORS[vendor][1]).respond_with_handler(sleeping(SLOWER_THAN_LIMIT, seen))

    error, elapsed = timed_failure(vendor, request_for(httpserver, vendor, LIMIT))

    assert (error.kind, error.message) == (ProviderError.TIMEOUT, "No answer within 1 s.")
    assert elapsed < LIMIT + MARGIN
    assert settled(httpserver, seen) == 1  # no retry once the time was up


def test_a_retry_wait_that_overruns_the_deadline_still_names_the_last_failure():
    # Each wait ends 20 µs before the deadline when it starts; the sleep runs past it
    # (Linux wakes a sleeper up to 50 µs late, a loaded machine later still). The retry
    # is not made, and the timeout says what the last attempt met, as when the wait
    # itself would not fit. Twenty calls: a sleep that happens to end in time instead
    # makes the retry (which fails the same way) and the next wait ends the call.
    def attempt(seconds: float) -> None:
        raise ConnectionError("HTTP 503")

    for _ in range(20):
        deadline = Deadline(0.05)
        just_short = functools.partial(lambda deadline, retry: deadline.remaining() - 2e-5, deadline)
        with pytest.raises(DeadlineExceeded) as caught:
            retry_until(deadline, attempt, retries=5, retriable=str, wait=just_short)

        assert caught.value.after == "HTTP 503"


@pytest.mark.parametrize("vendor", VENDORS)
def test_retries_of_a_failing_server_stop_at_the_limit(httpserver, settings, vendor):
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 10  # backoff 0.5 + 1 + 2 + 4 + 8… s: far past the limit
    httpserver.expect_request(VENDORS[vendor][1]).respond_with_json(
        {"error": {"code": 503, "message": "Overloaded.", "status": "UNAVAILABLE"}}, status=503
    )

    error, elapsed = timed_failure(vendor, request_for(httpserver, vendor, 2.0))

    assert (error.kind, error.message) == (
        ProviderError.TIMEOUT,
        "No answer within 2 s (gave up retrying after HTTP 503).",
    )
    assert elapsed < 2.0 + MARGIN
    assert len(httpserver.log) >= 2  # the SDK did retry while there was time


def test_check_preset_reports_a_timeout_within_the_preset_limit(httpserver, retries_on, workspace, ada):
    actor = Actor.for_user(ada)
    preset = vault_preset(workspace, httpserver.url_for("/v1"), secret=SECRET, key="slow", by=actor, timeout_seconds=1)
    seen: list[Request] = []
    httpserver.expect_request(VENDORS["openai"][1]).respond_with_handler(sleeping(SLOWER_THAN_LIMIT, seen))

    result = preset_check(preset=preset, actor=actor)

    assert (result.ok, result.error_kind, result.error_message) == (False, "timeout", "No answer within 1 s.")
    assert result.latency_ms < (LIMIT + MARGIN) * 1000
    assert settled(httpserver, seen) == 1


# --- turns: a turn, a child turn, a parent waiting on children ----------------------------
@pytest.fixture
def slow_child(workspace, ada, echo_preset, httpserver):
    """`slow`: an agent on an OpenAI-protocol preset (60 s timeout) whose server answers
    after SLOWER_THAN_LIMIT; `boss`: an echo agent that may delegate to it."""
    get_provider("openai")  # the SDK's first import takes a second: not what is measured here
    actor = Actor.for_user(ada)
    preset = vault_preset(workspace, httpserver.url_for("/v1"), secret=SECRET, key="slow", by=actor)
    agent_create(workspace=workspace, actor=actor, key="slow", name="Slow", preset=preset)
    return agent_create(
        workspace=workspace,
        actor=actor,
        key="boss",
        name="Boss",
        snapshot={"identity": {"name": "Boss"}, "allowed_tool_names": ["delegate"]},
    )


def delegate_line(message: str) -> str:
    return "@call delegate " + json.dumps({"agent": "slow", "message": message})


def timed_turn(agent, message: str, user) -> tuple[AgentTurn, float]:
    started = time.monotonic()
    turn = agent_turn_run(agent=agent, message=message, actor=Actor.for_user(user))
    return turn, time.monotonic() - started


def test_a_turn_ends_within_its_limit(httpserver, settings, retries_on, slow_child, alice):
    settings.AIHUMMER_TURN_TIMEOUT_SEC = 1
    seen: list[Request] = []
    httpserver.expect_request(VENDORS["openai"][1]).respond_with_handler(sleeping(SLOWER_THAN_LIMIT, seen))
    slow = Agent.objects.get(key="slow")

    turn, elapsed = timed_turn(slow, "Hello", alice)

    # The turn's second bounded the call (the preset allows 60): the turn says so.
    assert (turn.status, turn.error) == ("failed", "The turn ran out of time before a final answer.")
    assert elapsed < LIMIT + MARGIN
    assert settled(httpserver, seen) == 1


def test_a_child_turn_ends_within_its_parents_time(httpserver, settings, retries_on, slow_child, alice):
    settings.AIHUMMER_TURN_TIMEOUT_SEC = 1  # the child's own limit is the global 600 s (timeout_seconds is null)
    seen: list[Request] = []
    httpserver.expect_request(VENDORS["openai"][1]).respond_with_handler(sleeping(SLOWER_THAN_LIMIT, seen))

    turn, elapsed = timed_turn(slow_child, delegate_line("Summarise."), alice)

    assert (turn.status, turn.error) == ("failed", "The turn ran out of time before a final answer.")
    child = AgentTurn.objects.get(parent=turn)
    assert (child.status, child.error) == ("failed", "The turn ran out of time before a final answer.")
    assert elapsed < LIMIT + MARGIN
    assert settled(httpserver, seen) == 1


def test_the_parent_stops_waiting_for_children_when_its_time_is_up(httpserver, settings, retries_on, slow_child, alice):
    settings.AIHUMMER_TURN_TIMEOUT_SEC = 1
    seen: list[Request] = []
    httpserver.expect_request(VENDORS["openai"][1]).respond_with_handler(sleeping(SLOWER_THAN_LIMIT, seen))
    message = delegate_line("First.") + "\n" + delegate_line("Second.")  # run side by side

    turn, elapsed = timed_turn(slow_child, message, alice)

    assert elapsed < LIMIT + MARGIN
    # Each delegation came back as a failure (the child ran out of the parent's time) or
    # as "did not answer in time" (the parent stopped waiting), whichever came first.
    outcomes = [call["outcome"] for log in DebugLog.all_objects.filter(turn=turn) for call in log.tool_calls]
    assert sorted(outcomes) in (["refused", "refused"], ["refused", "timeout"], ["timeout", "timeout"])
    settled(httpserver, seen)
