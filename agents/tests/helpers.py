"""Helpers shared by the tests of this app (a test module never imports another)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import time

import pytest
from django.db import connection
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

from agents.models import Agent, AgentTestCase, PromptVersion
from agents.services import agent_create, agent_test_case_create, prompt_version_propose
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import actor_for
from workflows.tests.fake_openai import last_user_text

COPY_BLOCK = re.compile(r"^COPY public\.(\w+) \(.*?\) FROM stdin;\n(.*?)^\\\.$", re.MULTILINE | re.DOTALL)
FIRST_RELEASE_DEFAULTS = {
    "version": 1,
    "context": {"max_tokens": 128_000, "reserve_tokens": 4_096, "history_share": 0.5, "bootstrap_max_chars": 20_000},
    "pruning": {
        "enabled": True,
        "keep_last_tool_results": 3,
        "max_tool_result_chars": 4_000,
        "placeholder": "[older tool result trimmed]",
    },
    "memory_flush": {
        "enabled": False,
        "threshold_share": 0.8,
        "prompt": "Summarise what you must remember from this conversation.",
    },
    "session": {"idle_minutes": 60, "max_turns": 50},
    "children": {
        "max_depth": 1,
        "max_concurrent": 2,
        "max_per_parent": 3,
        "timeout_seconds": 600,
        "allowed_agents": [],
    },
    "max_iterations": 16,
    "app": {
        "reasoning_effort": None,
        "service_tier": None,
        "direct_completion": {"enabled": False, "max_tokens": 1_024, "timeout_ms": 15_000},
    },
    "interaction": {"allowed_channels": [], "allowed_users": [], "reply_mode": "direct"},
}

# Room so every bound can be tried alone, without tripping reserve_tokens < max_tokens
# or soft_trim_ratio <= hard_clear_ratio.
ROOMY_CONTEXT = {
    "context": {"max_tokens": 1_000_000, "reserve_tokens": 500},
    "pruning": {"soft_trim_ratio": 0.0, "hard_clear_ratio": 1.0},
}


def policy_with(path: str, value: object, base: dict | None = None) -> dict:
    """`{"a": {"b": value}}` for "a.b", merged into a copy of `base`."""
    policy = json.loads(json.dumps(base or {}))
    *blocks, name = path.split(".")
    node = policy
    for block in blocks:
        node = node.setdefault(block, {})
    node[name] = value
    return policy


def value_at(policy: dict, path: str) -> object:
    for part in path.split("."):
        policy = policy[part]
    return policy


# Every bound: (path, value just inside, value just outside, the refusal).
BOUNDS = [
    ("context.max_tokens", 1_000, 999, "must be at least 1000 (got 999)"),
    ("context.max_tokens", 2_000_000, 2_000_001, "must be at most 2000000 (got 2000001)"),
    ("context.reserve_tokens", 0, -1, "must be at least 0 (got -1)"),
    ("context.reserve_tokens", 200_000, 200_001, "must be at most 200000 (got 200001)"),
    ("context.history_share", 0.05, 0.04, "must be at least 0.05 (got 0.04)"),
    ("context.history_share", 0.95, 0.96, "must be at most 0.95 (got 0.96)"),
    ("context.max_history_messages", 1, 0, "must be at least 1 (got 0)"),
    ("context.max_history_messages", 5_000, 5_001, "must be at most 5000 (got 5001)"),
    ("context.bootstrap_max_chars", 500, 499, "must be at least 500 (got 499)"),
    ("context.bootstrap_max_chars", 200_000, 200_001, "must be at most 200000 (got 200001)"),
    ("pruning.ttl_seconds", 0, -1, "must be at least 0 (got -1)"),
    ("pruning.ttl_seconds", 2_592_000, 2_592_001, "must be at most 2592000 (got 2592001)"),
    ("pruning.keep_last_assistants", 0, -1, "must be at least 0 (got -1)"),
    ("pruning.keep_last_assistants", 100, 101, "must be at most 100 (got 101)"),
    ("pruning.soft_trim_ratio", 0.0, -0.01, "must be at least 0.0 (got -0.01)"),
    ("pruning.hard_clear_ratio", 1.0, 1.01, "must be at most 1.0 (got 1.01)"),
    ("pruning.head_chars", 0, -1, "must be at least 0 (got -1)"),
    ("pruning.head_chars", 100_000, 100_001, "must be at most 100000 (got 100001)"),
    ("pruning.tail_chars", 0, -1, "must be at least 0 (got -1)"),
    ("pruning.tail_chars", 100_000, 100_001, "must be at most 100000 (got 100001)"),
    ("memory_flush.soft_threshold_tokens", 0, -1, "must be at least 0 (got -1)"),
    ("memory_flush.soft_threshold_tokens", 200_000, 200_001, "must be at most 200000 (got 200001)"),
    ("session.idle_reset_minutes", 1, 0, "must be at least 1 (got 0)"),
    ("session.idle_reset_minutes", 525_600, 525_601, "must be at most 525600 (got 525601)"),
    ("session.index_prune_after_days", 1, 0, "must be at least 1 (got 0)"),
    ("session.index_prune_after_days", 3_650, 3_651, "must be at most 3650 (got 3651)"),
    ("session.index_max_entries", 1, 0, "must be at least 1 (got 0)"),
    ("session.index_max_entries", 100_000, 100_001, "must be at most 100000 (got 100001)"),
    ("children.max_depth", 0, -1, "must be at least 0 (got -1)"),
    ("children.max_depth", 4, 5, "must be at most 4 (got 5)"),
    ("children.max_concurrent", 1, 0, "must be at least 1 (got 0)"),
    ("children.max_concurrent", 8, 9, "must be at most 8 (got 9)"),
    ("children.max_per_parent", 0, -1, "must be at least 0 (got -1)"),
    ("children.max_per_parent", 5, 6, "must be at most 5 (got 6)"),
    ("children.timeout_seconds", 1, 0, "must be at least 1 (got 0)"),
    ("children.timeout_seconds", 172_800, 172_801, "must be at most 172800 (got 172801)"),
    ("children.archive_after_minutes", 0, -1, "must be at least 0 (got -1)"),
    ("children.archive_after_minutes", 43_200, 43_201, "must be at most 43200 (got 43201)"),
    ("max_iterations", 1, 0, "must be at least 1 (got 0)"),
    ("max_iterations", 256, 257, "must be at most 256 (got 257)"),
    ("app.direct_completion.max_tokens", 1, 0, "must be at least 1 (got 0)"),
    ("app.direct_completion.max_tokens", 4_096, 4_097, "must be at most 4096 (got 4097)"),
    ("app.direct_completion.timeout_ms", 100, 99, "must be at least 100 (got 99)"),
    ("app.direct_completion.timeout_ms", 60_000, 60_001, "must be at most 60000 (got 60001)"),
    ("session.scope", "per-peer", "per-user", "must be one of: per-peer, per-channel-peer"),
    ("app.direct_completion.mode", "always", "never", "must be one of: auto, always"),
    ("pruning.placeholder", "x" * 200, "x" * 201, "must have at most 200 characters (got 201)"),
    (
        "interaction.spawn_agent_ids",
        [f"agent-{n}" for n in range(50)],
        [f"agent-{n}" for n in range(51)],
        "must have at most 50 items (got 51)",
    ),
    (
        "interaction.user_ids",
        [f"user:{n}" for n in range(500)],
        [f"user:{n}" for n in range(501)],
        "must have at most 500 items (got 501)",
    ),
    (
        "interaction.child_tool_deny",
        [f"tool_{n}" for n in range(50)],
        [f"tool_{n}" for n in range(51)],
        "must have at most 50 items (got 51)",
    ),
]


def first_release(**changes: dict) -> dict:
    policy = json.loads(json.dumps(FIRST_RELEASE_DEFAULTS))
    for block, fields in changes.items():
        if isinstance(fields, dict):
            policy[block].update(fields)
        else:
            policy[block] = fields
    return policy


def stored_snapshot(policy: dict) -> dict:
    """A snapshot as the first releases stored it (before `preset` was a key), telling
    Camille only her name, with `policy` as it is given: rows for migration tests."""
    return {
        "schema": 1,
        "identity": {"name": "Camille", "role": "", "persona": "", "language": "", "goals": []},
        "system_prompt": None,
        "sections": [],
        "onboarding": "",
        "skills": [],
        "runtime_policy": policy,
        "allowed_tool_names": [],
    }


def pg_dump() -> str:
    """The data of the test database as pg_dump sees it from outside this process."""
    executable = shutil.which("pg_dump")
    if executable is None:
        pytest.fail("pg_dump is not installed, so the database cannot be checked for leaked secrets: install it.")
    db = connection.settings_dict
    command = [executable, "-h", db["HOST"] or "127.0.0.1", "-U", db["USER"] or "postgres", "--data-only"]
    command += ["-p", str(db["PORT"] or 5432), db["NAME"]]
    env = {**os.environ, "PGPASSWORD": db["PASSWORD"] or ""}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert result.returncode == 0, f"pg_dump failed: {result.stderr}"
    return result.stdout


def tables(dump: str) -> dict[str, str]:
    """The dump's rows, by table name."""
    return dict(COPY_BLOCK.findall(dump))


def form_data(page: str) -> dict[str, str | list[str]]:
    """What a browser posts back from the page's largest form (not the logout one), untouched."""
    form = max(re.findall(r"<form[^>]*>(.*?)</form>", page, re.S | re.I), key=len)
    data: dict[str, str | list[str]] = {}
    for tag in re.findall(r"<input[^>]*>", form):
        name, kind = re.search(r'name="([^"]+)"', tag), re.search(r'type="([^"]+)"', tag)
        if not name or (kind and kind.group(1) in {"submit", "checkbox", "radio"} and "checked" not in tag):
            continue
        value = re.search(r'value="([^"]*)"', tag)
        default = "on" if kind and kind.group(1) in {"checkbox", "radio"} else ""
        data[name.group(1)] = html.unescape(value.group(1)) if value else default
    for name, text in re.findall(r'<textarea[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>', form, re.S):
        data[name] = html.unescape(text.removeprefix("\n"))
    for name, options in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', form, re.S):
        selected = re.search(r'<option value="([^"]*)"[^>]*selected', options)
        data[name] = selected.group(1) if selected else ""
    return data


def call_line(httpserver: object, body: dict | None = None) -> str:
    """A message scripting the echo model to POST `body` to `httpserver`'s /hook."""
    arguments = {"method": "POST", "url": httpserver.url_for("/hook"), "body": json.dumps(body or {"n": 1})}
    return f"Notify the hook.\n@call http_request {json.dumps(arguments)}"


# --- execution trees on the local OpenAI-protocol server (workflows.tests.fake_openai) ---
def delegations(*pairs: tuple[str, str]) -> str:
    """A parent's message: the server answers it with one delegate call per pair."""
    return "delegate " + json.dumps([{"agent": agent, "message": message} for agent, message in pairs])


def scripted(body: dict) -> str | dict:
    """The server's answers: `delegate [...]` → those delegate calls; once their results
    came back → "done"; `sleep <s>` → "slept" after that many seconds; else an echo."""
    if body["messages"][-1]["role"] == "tool":
        return "done: " + " | ".join(m["content"] for m in body["messages"] if m["role"] == "tool")
    text = last_user_text(body)
    if text.startswith("delegate "):
        calls = [
            {"id": f"call-{n}", "type": "function", "function": {"name": "delegate", "arguments": json.dumps(spec)}}
            for n, spec in enumerate(json.loads(text.removeprefix("delegate ")))
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}
    if text.startswith("sleep "):
        time.sleep(float(text.removeprefix("sleep ")))
        return "slept"
    return f"answer: {text}"


def most_at_once(calls: list[tuple[float, float, str]]) -> int:
    """The most calls the server held at the same time (start, end pairs)."""
    edges = sorted([(start, 1) for start, _, _ in calls] + [(end, -1) for _, end, _ in calls])
    running = peak = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        running += step
        peak = max(peak, running)
    return peak


def sleeping(seconds: float, seen: list[Request]) -> object:
    """A local server's handler that records each request in `seen`, then takes `seconds`
    to answer an empty JSON body (a provider slower than the deadline under test)."""

    def handler(request: Request) -> Response:
        seen.append(request)
        time.sleep(seconds)
        return Response("{}", content_type="application/json")

    return handler


def settled(server: HTTPServer, seen: list[Request]) -> int:
    """How many requests a sleeping handler took, once it has answered: its late answer
    must land in this test's log, not the next one's (the server answers one at a time)."""
    deadline = time.monotonic() + 5
    while len(server.log) < len(seen) and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(seen)


# --- conversations over REST ---------------------------------------------------------------
def policy_agent(workspace: Workspace, ada: User, key: str, policy: dict, **options: object) -> Agent:
    """Agent `key` (Camille, a writer) under the runtime policy `policy`, made by `ada`;
    `options` go to `agent_create` (preset, is_sandbox…)."""
    snapshot = {"identity": {"name": "Camille", "role": "Writer"}, "runtime_policy": policy}
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key=key, name=key, snapshot=snapshot, **options)


def send_url(key: str) -> str:
    return f"/v1/admin/agents/{key}/conversations/messages"


def sent(body: dict) -> list[tuple[str, str]]:
    """The conversation part of a recorded request: (role, text), system prompt left out."""
    return [(m["role"], m["content"]) for m in body["messages"] if m["role"] in ("user", "assistant")]


# --- evidence (test_evidence, test_evidence_admin, test_evidence_browser) ----------------
CAMILLE = {"identity": {"name": "Camille", "role": "Rédactrice"}, "sections": [{"key": "ton", "body": "Sois brève."}]}
# Long enough that `budget` (at most 400 tokens) fails on a proposal that adds it.
LONG_SECTION = {"key": "details", "body": "Détaille chaque étape avec soin. " * 120}


def make_camille(workspace: Workspace, by: User | Actor) -> Agent:
    """The agent `camille` (CAMILLE), on the workspace's default preset."""
    return agent_create(workspace=workspace, actor=actor_for(by), key="camille", name="Camille", snapshot=CAMILLE)


def make_cases(agent: Agent, by: User | Actor) -> list[AgentTestCase]:
    """Two saved cases: `salue` (the answer says bonjour, in any case) and `budget` (at
    most 400 tokens)."""
    actor = actor_for(by)
    greets = {"contains": ["bonjour"], "case_insensitive": True}
    return [
        agent_test_case_create(agent=agent, actor=actor, name="salue", message="Bonjour", assertions=greets),
        agent_test_case_create(
            agent=agent, actor=actor, name="budget", message="Résume", assertions={"max_tokens": 400}
        ),
    ]


def propose_long(agent: Agent, by: User | Actor, reason: str = "") -> PromptVersion:
    """A proposal that adds LONG_SECTION to CAMILLE's sections: `budget` fails on it."""
    changes = {"sections": [*CAMILLE["sections"], LONG_SECTION]}
    return prompt_version_propose(agent=agent, changes=changes, actor=actor_for(by), reason=reason)
