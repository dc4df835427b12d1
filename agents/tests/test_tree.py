"""Execution trees on a local OpenAI-protocol server (`workflows.tests.fake_openai`):
a parent's model asks for `delegate` calls, each child is a turn of its own at the
server. Children's limits come from the delegating agent's `runtime_policy.children`,
which replaces the global settings for it, lower or higher (`agents.runtime.tree`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from django.conf import settings as django_settings
from django.db import connection
from pytest_django.fixtures import Settings

from agents.models import Agent, AgentTurn, ApprovalRequest, DebugLog, Preset, TreePlace
from agents.runtime import agent_turn_run, agent_turn_run_child
from agents.runtime.tools import ToolError
from agents.runtime.tree import KEEPER, Place, concurrency_refusal, depth_refusal
from agents.services.tool_approvals import approval_request_approve
from agents.services.tool_settings import agent_tool_settings_update, workspace_tool_policy_update
from agents.tests.helpers import delegations, most_at_once, scripted
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent
from workflows.tests.fake_openai import last_user_text

OUT_OF_TIME = "The turn ran out of time before a final answer."


@pytest.fixture
def server(openai_server):
    openai_server.reply = scripted
    return openai_server


def delegating(workspace: Workspace, ada: User, key: str, **children: object) -> Agent:
    return make_agent(workspace, key, by=ada, allowed_tool_names=["delegate"], runtime_policy={"children": children})


def places(root: AgentTurn) -> int:
    """The places taken in `root`'s tree, lapsed or not: a given-back place is deleted."""
    return TreePlace.objects.filter(root=root).count()


def tool_results(turn: AgentTurn) -> list[str]:
    return [call["result"] for log in DebugLog.all_objects.filter(turn=turn) for call in log.tool_calls]


def boss_of_slow(workspace: Workspace, ada: User, **children: object) -> Agent:
    """`boss` (its `children` policy as given) and the agent `slow` it may delegate to."""
    boss = delegating(workspace, ada, "boss", **children)
    make_agent(workspace, "slow", by=ada)
    return boss


def slow_child_run(boss: Agent, alice: User) -> AgentTurn:
    """`boss`'s turn that gives `slow` a message its server takes 1.5 s to answer."""
    return agent_turn_run(agent=boss, message=delegations(("slow", "sleep 1.5")), actor=Actor.for_user(alice))


def test_a_childs_timeout_replaces_a_shorter_global_setting(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC = 1
    boss = boss_of_slow(workspace, ada, timeout_seconds=10)

    turn = slow_child_run(boss, alice)

    child = AgentTurn.objects.get(parent=turn)
    assert (child.status, child.answer) == (AgentTurn.Status.SUCCEEDED, "slept")
    assert turn.answer == "done: slept"


def test_a_childs_timeout_replaces_a_longer_global_setting(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC = 600
    boss = boss_of_slow(workspace, ada, timeout_seconds=1)

    turn = slow_child_run(boss, alice)

    child = AgentTurn.objects.get(parent=turn)
    assert (child.status, child.error) == (AgentTurn.Status.FAILED, OUT_OF_TIME)
    assert tool_results(turn) == [f"Agent 'slow' failed: {OUT_OF_TIME}"]
    assert turn.status == AgentTurn.Status.SUCCEEDED


def test_a_null_timeout_takes_the_global_setting(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC = 1
    boss = boss_of_slow(workspace, ada)

    turn = slow_child_run(boss, alice)

    assert AgentTurn.objects.get(parent=turn).error == OUT_OF_TIME


def test_a_childs_long_timeout_is_still_bounded_by_what_its_parent_has_left(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    boss = boss_of_slow(workspace, ada, timeout_seconds=48 * 3600)
    agent_turn_run(
        agent=boss, message="warm", actor=Actor.for_user(alice)
    )  # the SDK's first import is not the root's time
    settings.AIHUMMER_TURN_TIMEOUT_SEC = 1  # the root's own time

    turn = slow_child_run(boss, alice)

    child = AgentTurn.objects.get(parent=turn)
    assert (child.status, child.error) == (AgentTurn.Status.FAILED, OUT_OF_TIME), turn.error
    assert tool_results(turn) == [f"Agent 'slow' failed: {OUT_OF_TIME}"]
    assert (turn.status, turn.error) == (AgentTurn.Status.FAILED, OUT_OF_TIME)


# --- children.max_concurrent: counted per tree, in the database -----------------------
# Children run in threads with their own connections: the rows must be committed.
def two_by_two(leaf_message: str) -> str:
    """The root's message: two mids, each delegating to two leaves."""
    mid = delegations(("leaf", leaf_message), ("leaf", leaf_message))
    return delegations(("mid", mid), ("mid", mid))


def tree_of(workspace: Workspace, ada: User, cap: int) -> Agent:
    limits = {"max_concurrent": cap, "max_per_parent": 2, "max_depth": 2}
    root = delegating(workspace, ada, "root", **limits)
    delegating(workspace, ada, "mid", **limits)
    make_agent(workspace, "leaf", by=ada)
    return root


@pytest.mark.django_db(transaction=True)
def test_no_more_children_than_max_concurrent_are_at_the_provider_at_once(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server
) -> None:
    root = tree_of(workspace, ada, cap=2)

    turn = agent_turn_run(agent=root, message=two_by_two("sleep 0.3"), actor=Actor.for_user(alice))

    turns = AgentTurn.objects.exclude(pk=turn.pk)
    assert sorted(t.agent_key for t in turns) == ["leaf"] * 4 + ["mid"] * 2
    assert {t.status for t in turns} == {AgentTurn.Status.SUCCEEDED}
    assert {t.root_id for t in turns} == {turn.pk}
    leaf_calls = [call for call in server.calls if call[2] == "sleep 0.3"]
    assert len(leaf_calls) == 4
    assert most_at_once(server.calls) <= 2
    assert places(turn) == 0  # every place given back
    assert turn.answer.startswith("done: done: slept | slept")


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
def test_children_run_side_by_side_up_to_max_concurrent(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server
) -> None:
    root = delegating(workspace, ada, "root", max_concurrent=4, max_per_parent=4)
    make_agent(workspace, "leaf", by=ada)

    turn = agent_turn_run(agent=root, message=delegations(*[("leaf", "sleep 0.5")] * 4), actor=Actor.for_user(alice))

    assert turn.answer == "done: " + " | ".join(["slept"] * 4)
    assert most_at_once([call for call in server.calls if call[2] == "sleep 0.5"]) == 4
    assert places(turn) == 0


@pytest.mark.django_db(transaction=True)
def test_a_child_lends_its_place_while_its_own_children_run(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server
) -> None:
    # One place in the tree: the mid holds it, then waits for its leaf, which needs it.
    limits = {"max_concurrent": 1, "max_depth": 2, "timeout_seconds": 30}
    root = delegating(workspace, ada, "root", **limits)
    delegating(workspace, ada, "mid", **limits)
    make_agent(workspace, "leaf", by=ada)

    message = delegations(("mid", delegations(("leaf", "sleep 0.1"))))
    turn = agent_turn_run(agent=root, message=message, actor=Actor.for_user(alice))

    assert [(t.agent_key, t.depth, t.status) for t in AgentTurn.objects.order_by("depth")] == [
        ("root", 0, AgentTurn.Status.SUCCEEDED),
        ("mid", 1, AgentTurn.Status.SUCCEEDED),
        ("leaf", 2, AgentTurn.Status.SUCCEEDED),
    ]
    assert turn.answer == "done: done: slept"
    assert places(turn) == 0


@pytest.mark.django_db(transaction=True)
def test_a_child_without_a_place_before_its_deadline_is_refused_as_a_tool_result(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server
) -> None:
    # The first child at the provider makes the tree's count one more, as a child of the
    # same tree running in another process would, and holds it: the other child waits
    # for a place until its deadline (children.timeout_seconds = 1).
    outside: list[Place] = []
    lock = threading.Lock()

    def holding(body: dict) -> str | dict:
        if last_user_text(body) == "hold":
            with lock:
                if not outside:
                    root = AgentTurn.objects.get(parent=None)
                    outside.append(Place(root.pk, cap=8))
                    assert outside[0].take(time.monotonic() + 5)
                    connection.close()  # the server thread's own, opened by these queries
        return scripted(body)

    server.reply = holding
    root = delegating(workspace, ada, "root", max_concurrent=1, timeout_seconds=1)
    make_agent(workspace, "leaf", by=ada)

    turn = agent_turn_run(
        agent=root, message=delegations(("leaf", "hold"), ("leaf", "hold")), actor=Actor.for_user(alice)
    )

    calls = [call for log in DebugLog.all_objects.filter(turn=turn) for call in log.tool_calls]
    assert sorted((c["outcome"], c["result"]) for c in calls) == [
        ("ran", "answer: hold"),
        ("refused", concurrency_refusal(1)),
    ]
    assert concurrency_refusal(1) == (
        "Delegation refused: 1 children of this execution tree were running until this child's time ran out "
        "(runtime_policy.children.max_concurrent = 1); try again later or with fewer children at once."
    )
    assert AgentTurn.objects.filter(parent=turn).count() == 1
    assert places(turn) == 1  # the outside holder's
    outside[0].give_back()
    assert places(turn) == 0


HOLDER = """
import sys, time
import django
django.setup()
from agents.runtime.tree import Place
places = [Place(int(sys.argv[1]), cap=2) for _ in range(2)]
assert all(place.take(time.monotonic() + 5) for place in places)
print("held", flush=True)
sys.stdin.readline()
for place in places:
    place.give_back()
print("given back", flush=True)
"""


def holder(root: AgentTurn, *, lease_seconds: int = 30) -> subprocess.Popen:
    """Another process holding two of `root`'s places (cap 2) until told on its stdin."""
    db = django_settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "aihummer.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "AIHUMMER_TREE_PLACE_LEASE_SEC": str(lease_seconds),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root.pk)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=django_settings.BASE_DIR,
    )
    assert process.stdout.readline().strip() == "held"
    return process


def stopped(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_the_count_holds_across_processes(workspace: Workspace, ada: User, alice: User, echo_preset: Preset) -> None:
    root = agent_turn_run(agent=make_agent(workspace, "root", by=ada), message="hi", actor=Actor.for_user(alice))
    other = holder(root)
    try:
        here = Place(root.pk, cap=2)
        refused = here.take(time.monotonic() + 0.1)
        count_while_held = places(root)
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "given back"
        taken = here.take(time.monotonic() + 1)
        other.stdin.close()
        other.wait(timeout=10)  # its connection closed before the test database goes
    finally:
        stopped(other)

    assert (refused, count_while_held, taken) == (False, 2, True)
    here.give_back()
    assert places(root) == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_a_killed_processs_places_lapse_and_a_live_ones_do_not(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    # Leases of 1 s: the holder's keeper renews them while it lives; SIGKILL stops it
    # before it can give them back.
    root = agent_turn_run(agent=make_agent(workspace, "root", by=ada), message="hi", actor=Actor.for_user(alice))
    other = holder(root, lease_seconds=1)
    try:
        here = Place(root.pk, cap=2)
        refused_for_two_leases = here.take(time.monotonic() + 2.5)
        other.kill()  # SIGKILL: no give-back, no last renewal
        other.wait(timeout=10)
        left_behind = places(root)
        taken = here.take(time.monotonic() + 10)
    finally:
        stopped(other)

    assert (refused_for_two_leases, left_behind, taken) == (False, 2, True)
    assert places(root) == 1  # the lapsed places deleted by the take, this one kept
    here.give_back()
    assert places(root) == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_a_running_childs_place_outlasts_its_lease(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    # One place, leases of 1 s, each leaf at the provider for 1.5 s: unless this
    # process's keeper renews the first leaf's place, the second starts beside it.
    settings.AIHUMMER_TREE_PLACE_LEASE_SEC = 1
    root = delegating(workspace, ada, "root", max_concurrent=1, max_per_parent=2, timeout_seconds=30)
    make_agent(workspace, "leaf", by=ada)

    turn = agent_turn_run(
        agent=root, message=delegations(("leaf", "sleep 1.5"), ("leaf", "sleep 1.5")), actor=Actor.for_user(alice)
    )

    assert turn.answer == "done: slept | slept"
    assert len([call for call in server.calls if call[2] == "sleep 1.5"]) == 2
    assert most_at_once(server.calls) == 1
    assert (places(turn), KEEPER.held()) == (0, frozenset())


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
def test_a_resumed_root_turn_keeps_its_trees_cap(
    workspace: Workspace, ada: User, alice: User, bob: User, local_preset: Preset, server, httpserver
) -> None:
    # The root's first call waits for a person (http_request); once bob approves it, the
    # turn resumes (inline: no broker) and delegates two slow leaves under max_concurrent 1.
    httpserver.expect_request("/hook", method="POST").respond_with_data("accepted", status=202)
    root = make_agent(
        workspace,
        "root",
        by=ada,
        allowed_tool_names=["http_request", "delegate"],
        runtime_policy={"children": {"max_concurrent": 1, "max_per_parent": 2, "timeout_seconds": 30}},
    )
    workspace_tool_policy_update(workspace=workspace, actor=Actor.for_user(ada), allow_private_addresses=True)
    agent_tool_settings_update(agent=root, actor=Actor.for_user(ada), http_allowed_hosts=["127.0.0.1", "localhost"])
    make_agent(workspace, "leaf", by=ada)
    hook = {"method": "POST", "url": httpserver.url_for("/hook"), "body": "{}"}

    def reply(body: dict) -> str | dict:
        last = body["messages"][-1]
        if last_user_text(body) == "hook" and last["role"] == "user":
            call = {
                "id": "call-hook",
                "type": "function",
                "function": {"name": "http_request", "arguments": json.dumps(hook)},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        if last["role"] == "tool" and last["tool_call_id"] == "call-hook":  # resumed: now the children
            return scripted({"messages": [{"role": "user", "content": delegations(*[("leaf", "sleep 0.5")] * 2)}]})
        return scripted(body)

    server.reply = reply
    paused = agent_turn_run(agent=root, message="hook", actor=Actor.for_user(alice))
    assert paused.status == AgentTurn.Status.WAITING
    request = ApprovalRequest.objects.get(turn=paused)

    approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)

    turn = AgentTurn.objects.get(pk=paused.pk)
    assert turn.status == AgentTurn.Status.SUCCEEDED, turn.error
    assert turn.answer.endswith("slept | slept")
    children = AgentTurn.objects.filter(parent=turn)
    assert [(c.agent_key, c.root_id, c.status) for c in children] == [("leaf", turn.pk, "succeeded")] * 2
    leaf_calls = [call for call in server.calls if call[2] == "sleep 0.5"]
    assert (len(leaf_calls), most_at_once(leaf_calls)) == (2, 1)
    assert places(turn) == 0


# --- one tree's children in two processes ---------------------------------------------
CHILD_RUNNER = """
import sys
import django
django.setup()
from agents.models import AgentTurn
from agents.runtime import agent_turn_run_child
from agents.runtime.tools import ToolError
from aihummer.actors import Actor
from aihummer.models import User
parent = AgentTurn.objects.get(pk=int(sys.argv[1]))
actor = Actor.for_user(User.objects.get(pk=int(sys.argv[2])))
print("ready", flush=True)
sys.stdin.readline()
try:
    print(agent_turn_run_child(parent=parent, agent_key="mid", message=sys.argv[3], actor=actor), flush=True)
except ToolError as exc:
    print(f"refused: {exc}", flush=True)
"""


def child_runner(parent: AgentTurn, by: User, message: str) -> subprocess.Popen:
    """Another process that runs a `mid` child of `parent` once told on its stdin."""
    db = django_settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "aihummer.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD_RUNNER, str(parent.pk), str(by.pk), message],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=django_settings.BASE_DIR,
    )
    assert process.stdout.readline().strip() == "ready"
    return process


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
@pytest.mark.parametrize("cap", [2, 4])
def test_the_trees_cap_holds_for_children_running_in_two_processes(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, cap: int
) -> None:
    # Two processes each run a mid of the same root, each mid two leaves of 1.5 s: four
    # leaves of one tree, at most two in one process (max_per_parent 2).
    root = tree_of(workspace, ada, cap=cap)
    turn = agent_turn_run(agent=root, message="hi", actor=Actor.for_user(alice))
    mid = delegations(("leaf", "sleep 1.5"), ("leaf", "sleep 1.5"))
    runners = []
    try:
        runners = [child_runner(turn, alice, mid) for _ in range(2)]
        for runner in runners:  # both set up: they start together
            runner.stdin.write("go\n")
            runner.stdin.flush()
        answers = [runner.stdout.readline().strip() for runner in runners]
        for runner in runners:
            runner.stdin.close()
            # Its answer is in; this only waits for the interpreter to finish exiting,
            # which took over 10 s once at load 8 (6 xdist workers beside other suites).
            runner.wait(timeout=30)
    finally:
        for runner in runners:
            stopped(runner)

    assert answers == ["done: slept | slept"] * 2
    mids = AgentTurn.objects.filter(parent=turn)
    assert [(t.agent_key, t.depth, t.status) for t in mids] == [("mid", 1, "succeeded")] * 2
    leaves = AgentTurn.objects.filter(parent__in=mids)
    assert [(t.root_id, t.depth, t.status) for t in leaves] == [(turn.pk, 2, "succeeded")] * 4
    leaf_calls = [call for call in server.calls if call[2] == "sleep 1.5"]
    assert len(leaf_calls) == 4
    if cap == 2:
        assert most_at_once(leaf_calls) <= 2
    else:  # room for all four: the two processes' leaves were at the provider together
        assert most_at_once(leaf_calls) > 2
    assert places(turn) == 0


def test_a_child_run_from_another_process_keeps_the_limits_its_ancestors_hand_down(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server
) -> None:
    # The root allows one child per turn and depth 1; its leaf (null: the global 2) may
    # not go past the root's limit.
    root = delegating(workspace, ada, "root", max_per_parent=1, max_depth=1)
    make_agent(workspace, "leaf", by=ada, allowed_tool_names=["delegate"])
    turn = agent_turn_run(agent=root, message=delegations(("leaf", "hi")), actor=Actor.for_user(alice))
    leaf = AgentTurn.objects.get(parent=turn)
    actor = Actor.for_user(alice)

    with pytest.raises(ToolError) as second:
        agent_turn_run_child(parent=turn, agent_key="leaf", message="again", actor=actor)
    with pytest.raises(ToolError) as deeper:
        agent_turn_run_child(parent=leaf, agent_key="leaf", message="deeper", actor=actor)

    assert str(second.value) == "Delegation refused: at most 1 per turn (runtime_policy.children.max_per_parent)."
    assert str(deeper.value) == depth_refusal(depth=1, limit=1)
    assert AgentTurn.objects.count() == 2
