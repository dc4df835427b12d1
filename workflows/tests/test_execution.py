"""Running workflows without a broker (inline, through `enqueue`), on PostgreSQL: the
seed's pipeline, skips, failures, re-delivery, the portable path, and the statements
one step costs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agents.models import AgentTurn
from agents.runtime import agent_turn_run
from agents.services import agent_update
from aihummer import db
from aihummer.actors import Actor
from aihummer.tests.factories import make_agent
from workflows import execution, store
from workflows.execution import _step_start, _step_turn, plan_for, workflow_step_run
from workflows.models import StepRun, WorkflowRun
from workflows.services import workflow_create, workflow_run_cancel, workflow_run_start, workflow_update

pytestmark = pytest.mark.django_db(transaction=True)


def steps_of(run: WorkflowRun) -> dict[str, StepRun]:
    return {step.name: step for step in StepRun.objects.filter(run=run)}


def test_the_seed_pipeline_runs_inline_without_a_broker(pipeline, alice_actor, reader, critic) -> None:
    run = workflow_run_start(workflow=pipeline, actor=alice_actor, message="Article : Lorem ipsum")
    run.refresh_from_db()
    steps = steps_of(run)
    lecture, critique = steps["lecture"], steps["critique"]
    assert run.status == "completed"
    assert lecture.input == "Article : Lorem ipsum"
    assert lecture.output["answer"].startswith("[echo echo-1] Article : Lorem ipsum #sp=")
    # The critic reads the reader's answer, as the mapping says.
    assert critique.input == lecture.output["answer"]
    assert run.outputs == {"final": critique.output["answer"]}
    assert run.answer == critique.output["answer"]
    assert [lecture.status, critique.status] == ["completed", "completed"]
    assert [lecture.attempts, critique.attempts] == [1, 1]
    assert lecture.agent_version == 1 and lecture.turn.agent_key == "lecteur"
    assert critique.turn.actor_source == "admin:alice" and critique.turn.started_by_id == alice_actor.user.pk
    assert run.input_tokens == lecture.input_tokens + critique.input_tokens > 0
    assert run.started_at <= lecture.started_at < lecture.finished_at <= critique.started_at <= run.finished_at
    assert run.context["steps"]["lecture"]["output"]["text"] == lecture.output["answer"]


def test_the_portable_path_gives_the_same_run(pipeline, alice_actor, monkeypatch) -> None:
    monkeypatch.setattr(store, "PORTABLE_ONLY", True)
    run = workflow_run_start(workflow=pipeline, actor=alice_actor, message="Texte")
    run.refresh_from_db()
    steps = steps_of(run)
    assert run.status == "completed"
    assert steps["critique"].input == steps["lecture"].output["answer"]
    assert run.answer == steps["critique"].output["answer"]
    assert run.input_tokens == steps["lecture"].input_tokens + steps["critique"].input_tokens


def test_output_keys_name_the_outputs_and_an_empty_mapping_passes_inputs(workspace, reader, critic, operator) -> None:
    definition = {
        "version": 1,
        "steps": [
            {"name": "lecture", "agent_name": "lecteur", "output_key": "resume"},
            {"name": "critique", "agent_name": "critique", "input_mapping": {"t": "$.steps.lecture.output.text"}},
        ],
    }
    workflow = workflow_create(workspace=workspace, actor=operator, key="keys", name="Keys", definition=definition)
    run = workflow_run_start(workflow=workflow, actor=operator, inputs={"topic": "été"})
    run.refresh_from_db()
    lecture = steps_of(run)["lecture"]
    assert lecture.input == '{"topic": "été"}'
    assert run.outputs == {"resume": lecture.output["answer"]}
    assert run.answer == lecture.output["answer"]


def test_a_false_condition_skips_the_step_and_its_dependents(workspace, reader, critic, operator) -> None:
    definition = {
        "version": 1,
        "steps": [
            {"name": "lecture", "agent_name": "lecteur", "output_key": "resume"},
            {"name": "critique", "agent_name": "critique", "when": "$.inputs.review", "output_key": "avis"},
            {"name": "relecture", "agent_name": "critique", "input_mapping": {"t": "$.steps.critique.output.answer"}},
        ],
    }
    workflow = workflow_create(workspace=workspace, actor=operator, key="cond", name="Cond", definition=definition)
    run = workflow_run_start(workflow=workflow, actor=operator, inputs={"message": "Texte", "review": False})
    run.refresh_from_db()
    steps = steps_of(run)
    assert run.status == "completed"
    assert [steps[n].status for n in ("lecture", "critique", "relecture")] == ["completed", "skipped", "skipped"]
    assert steps["critique"].error == "Skipped: $.inputs.review is not true."
    assert steps["relecture"].error == "Skipped: step 'critique' was skipped."
    assert steps["critique"].turn_id is None and steps["relecture"].turn_id is None
    assert run.outputs == {"resume": steps["lecture"].output["answer"], "avis": None}
    assert run.answer == steps["lecture"].output["answer"]


def test_a_failing_step_fails_the_run_and_starts_nothing_after_it(pipeline, operator) -> None:
    run = workflow_run_start(workflow=pipeline, actor=operator, message="@error unavailable")
    run.refresh_from_db()
    steps = steps_of(run)
    assert run.status == "failed"
    assert steps["lecture"].status == "failed"
    assert steps["lecture"].error.startswith("Provider error (unavailable)")
    assert run.error == f"Step 'lecture' failed: {steps['lecture'].error}"
    assert steps["critique"].status == "pending" and steps["critique"].attempts == 0
    assert run.finished_at is not None


def test_a_definition_that_no_longer_validates_gives_a_failed_run(pipeline, critic, operator) -> None:
    agent_update(agent=critic, actor=operator, is_active=False)
    run = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error == (
        "The definition no longer validates: "
        "steps[1].agent_name: agent 'critique' is disabled; enable it or name another."
    )
    assert not StepRun.objects.filter(run=run).exists()


@pytest.mark.django_db(transaction=False)
def test_an_agent_deleted_mid_run_fails_its_step_clearly(pipeline, critic, operator) -> None:
    # Inside the test's transaction nothing commits: steps run only when called here.
    run = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")
    assert workflow_step_run(run_id=run.pk, step="lecture") == "completed"
    critic.delete()
    assert workflow_step_run(run_id=run.pk, step="critique") == "failed"
    run.refresh_from_db()
    critique = steps_of(run)["critique"]
    assert critique.error == "Agent 'critique' was deleted after the run started."
    assert critique.input == steps_of(run)["lecture"].output["answer"]
    assert run.status == "failed"
    assert run.error == "Step 'critique' failed: Agent 'critique' was deleted after the run started."


def test_a_second_delivery_of_a_step_does_nothing(pipeline, operator) -> None:
    run = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")
    turns = AgentTurn.objects.count()
    assert workflow_step_run(run_id=run.pk, step="lecture") is None
    assert workflow_step_run(run_id=str(run.pk), step="critique") is None
    assert AgentTurn.objects.count() == turns
    assert [s.attempts for s in StepRun.objects.filter(run=run).order_by("position")] == [1, 1]


def test_a_run_that_changed_workflow_keeps_its_own_definition(pipeline, operator, workspace) -> None:
    first = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")
    definition = {**pipeline.definition, "outputs": {"final": "$.steps.lecture.output.answer"}}
    workflow = workflow_update(workflow=pipeline, actor=operator, definition=definition)
    second = workflow_run_start(workflow=workflow, actor=operator, message="Texte")
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.workflow_version, second.workflow_version) == (1, 2)
    assert first.outputs["final"] != second.outputs["final"]
    assert second.outputs["final"] == steps_of(second)["lecture"].output["answer"]


# --- what a step costs ----------------------------------------------------------------
# Inside the test's transaction each of a step's transactions shows as a savepoint pair:
# one pair = one commit on a worker; a statement outside any pair commits on its own.
# The claim with the turn's agent read (one statement, its own commit: no savepoint).
CLAIM = ["WITH"]
# A completed step with dependents: its turn, its debug log and its finish in one
# statement (its own commit).
COMPOSED = ["WITH"]
RESULT = ["SAVEPOINT", "WITH", "WITH", "RELEASE"]  # turn with its debug log (one statement), finish
# On a worker, a completed step's lone successor is claimed (with its agent read) in the
# same statement: that step's hand-off, its own commit.
HANDED_ON = ["WITH"]


@pytest.fixture
def three_steps(workspace, echo_preset, operator):
    agent = make_agent(workspace, "echo-agent", "Repeat.", preset=echo_preset)
    definition = {"version": 1, "steps": [{"name": n, "agent_name": agent.key} for n in ("one", "two", "three")]}
    return agent, workflow_create(workspace=workspace, actor=operator, key="three", name="Three", definition=definition)


def kinds(captured) -> list[str]:
    return [query["sql"].split(maxsplit=1)[0] for query in captured.captured_queries]


def statements(kinds: list[str]) -> int:
    return sum(kind not in ("SAVEPOINT", "RELEASE") for kind in kinds)


@pytest.mark.django_db(transaction=False)
def test_one_echo_turn_reads_once_and_writes_once(three_steps, operator, django_assert_num_queries) -> None:
    agent, _ = three_steps
    with django_assert_num_queries(4) as captured:
        turn = agent_turn_run(
            agent=agent,
            message="Bonjour",
            actor=Actor.for_workflow_run(workspace_id=agent.workspace_id, source="cli:tests", person_id=None),
        )
    # The turn's row and its one debug log: one statement (a data-modifying CTE).
    assert kinds(captured) == ["SELECT", "SAVEPOINT", "WITH", "RELEASE"]
    turn.refresh_from_db()
    log = turn.debug_logs.get()
    assert (turn.status, log.sequence, log.turn_id, log.workspace_id) == ("succeeded", 1, turn.pk, turn.workspace_id)
    assert turn.answer.startswith("[echo ") and log.response and log.created_at


def rows_of(run: WorkflowRun) -> tuple[dict, list[dict]]:
    """The run's row and its steps' rows as stored, without keys and times of their own."""
    own = {"id", "run", "created_at", "deadline_at"}
    stored = WorkflowRun.objects.filter(pk=run.pk).values().get()
    steps = StepRun.objects.filter(run=run).order_by("position").values()
    return (
        {k: v for k, v in stored.items() if k not in own},
        [{k: v for k, v in step.items() if k not in own | {"run_id"}} for step in steps],
    )


@pytest.mark.django_db(transaction=False)
def test_a_start_is_the_agents_read_and_one_statement_that_commits_by_itself(
    three_steps, operator, monkeypatch, django_assert_num_queries, django_capture_on_commit_callbacks
) -> None:
    _, workflow = three_steps
    with django_capture_on_commit_callbacks() as dispatched, django_assert_num_queries(2) as start:
        run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    # The definition's agents, then the run with its steps (a data-modifying CTE): no
    # savepoint pair, so no BEGIN and COMMIT on a worker or a web process.
    assert kinds(start) == ["SELECT", "WITH"]
    assert len(dispatched) == 1  # the first step, once the statement has committed
    assert [step.run_id for step in StepRun.objects.filter(run=run)] == [run.pk] * 3
    # The same rows as save() and bulk_create() write (the portable path, two statements).
    monkeypatch.setattr(connection, "vendor", "sqlite")
    try:
        with django_assert_num_queries(5) as portable:
            other = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    finally:
        monkeypatch.undo()
    assert kinds(portable) == ["SELECT", "SAVEPOINT", "INSERT", "INSERT", "RELEASE"]
    assert rows_of(other) == rows_of(run)
    assert rows_of(run)[1][0] | {"name": "one", "position": 0, "status": "pending", "attempts": 0} == rows_of(run)[1][0]


@pytest.mark.django_db(transaction=False)
def test_an_echo_step_costs_two_commits_and_at_most_five_statements(
    three_steps, operator, django_assert_num_queries, django_capture_on_commit_callbacks
) -> None:
    _, workflow = three_steps
    with django_capture_on_commit_callbacks() as dispatched:
        run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    assert len(dispatched) == 1  # the first step, enqueued on commit (not run: no commit in this test)

    # The first step also marks its run running, in its claim's statement.
    with django_capture_on_commit_callbacks() as dispatched, django_assert_num_queries(2) as first:
        assert workflow_step_run(run_id=run.pk, step="one") == "completed"
    assert len(dispatched) == 1
    # A middle step: its dispatch sends a task, not a statement.
    with django_capture_on_commit_callbacks() as dispatched, django_assert_num_queries(2) as middle:
        assert workflow_step_run(run_id=run.pk, step="two") == "completed"
    assert len(dispatched) == 1
    # The last one completes its run in its result's transaction.
    with django_assert_num_queries(6) as last:
        assert workflow_step_run(run_id=run.pk, step="three") == "completed"

    assert kinds(first) == CLAIM + COMPOSED
    assert kinds(middle) == CLAIM + COMPOSED
    assert kinds(last) == CLAIM + RESULT[:-1] + ["UPDATE", "RELEASE"]
    assert [statements(kinds(step)) for step in (first, middle, last)] == [2, 2, 4]
    # Two commits per step: the claim's statement (with the agent read), and the result
    # (one statement, or the last step's one transaction).
    assert [kinds(step).count("SAVEPOINT") for step in (first, middle, last)] == [0, 0, 1]
    run.refresh_from_db()
    steps = steps_of(run)
    # The composed finish recorded each step's turn, its log and its usage roll-up.
    for name in ("one", "two"):
        turn = AgentTurn.objects.get(pk=steps[name].turn_id)
        assert (turn.status, turn.debug_logs.get().turn_id) == ("succeeded", turn.pk)
        assert steps[name].output["answer"] == turn.answer
        assert run.context["steps"][name]["usage"]["input_tokens"] == turn.input_tokens
    assert run.input_tokens == sum(step.input_tokens for step in steps.values())
    run.refresh_from_db()
    assert run.started_at is not None
    assert (run.status, run.answer) == ("completed", steps_of(run)["three"].output["answer"])
    assert connection.vendor == "postgresql"


@pytest.mark.django_db(transaction=False)
def test_prepared_on_the_server_a_step_sends_the_same_statements_and_gives_the_same_run(
    three_steps, operator, monkeypatch, django_assert_num_queries
) -> None:
    # Prepared where connections live on (a pool): forced here, where they do not.
    monkeypatch.setattr(db, "PREPARE", True)
    _, workflow = three_steps
    run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    workflow_step_run(run_id=run.pk, step="one")
    with django_assert_num_queries(2) as middle:
        assert workflow_step_run(run_id=run.pk, step="two") == "completed"
    assert kinds(middle) == CLAIM + COMPOSED
    with django_assert_num_queries(6) as last:
        assert workflow_step_run(run_id=run.pk, step="three") == "completed"
    assert kinds(last) == CLAIM + RESULT[:-1] + ["UPDATE", "RELEASE"]

    run.refresh_from_db()
    steps = steps_of(run)
    assert (run.status, run.answer) == ("completed", steps["three"].output["answer"])
    assert [steps[name].output["answer"] for name in ("one", "two", "three")] == [steps["one"].output["answer"]] * 3
    assert [log.turn_id for log in AgentTurn.objects.get(pk=steps["two"].turn_id).debug_logs.all()] == [
        steps["two"].turn_id
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    # The definition's agents and the run with its steps (the start), the claim with its
    # agent read, the turn with its log and finish (a middle step), the turn with its
    # log, the finish apart and the run's completion (the last step): each prepared once.
    assert len(prepared) == 7
    assert sum('FROM "agents_agent" WHERE "workspace_id" = $1 AND "key" = ANY($2)' in sql for sql in prepared) == 1
    assert sum('WITH parent AS (INSERT INTO "workflows_workflowrun"' in sql for sql in prepared) == 1
    assert sum('WITH parent AS (INSERT INTO "agents_agentturn"' in sql for sql in prepared) == 2
    assert sum("finished AS (" in sql for sql in prepared) == 1
    assert sum("SET status = 'completed'" in sql for sql in prepared) == 1


@pytest.mark.django_db(transaction=False)
def test_on_a_worker_a_chain_costs_one_statement_and_one_commit_per_step(
    three_steps, operator, settings, django_assert_num_queries, django_capture_on_commit_callbacks
) -> None:
    _, workflow = three_steps
    run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    settings.CELERY_BROKER_URL = "memory://"  # a worker's: a lone successor runs in the same task

    with django_capture_on_commit_callbacks() as dispatched, django_assert_num_queries(8) as chain:
        assert workflow_step_run(run_id=run.pk, step="one") == "completed"
    # one's claim; one's turn, log, finish and the claim of two, in one statement; the
    # same from two to three; three completes the run in its result's transaction.
    assert kinds(chain) == CLAIM + HANDED_ON + HANDED_ON + RESULT[:-1] + ["UPDATE", "RELEASE"]
    assert statements(kinds(chain)) == 6 and kinds(chain).count("SAVEPOINT") == 1  # 4 commits for 3 steps
    assert dispatched == []  # two and three ran here, without a task
    run.refresh_from_db()
    steps = steps_of(run)
    assert (run.status, run.answer) == ("completed", steps["three"].output["answer"])
    assert [steps[name].attempts for name in ("one", "two", "three")] == [1, 1, 1]
    # Each successor claimed as its predecessor finished.
    assert steps["two"].started_at == steps["one"].finished_at and steps["three"].started_at == steps["two"].finished_at
    assert [steps[name].lease_expires_at for name in ("one", "two", "three")] == [None] * 3
    assert AgentTurn.objects.get(pk=steps["two"].turn_id).agent_id == steps["two"].agent_id


@pytest.mark.django_db(transaction=False)
def test_a_successor_whose_runs_plan_left_the_cache_reads_the_definition(
    three_steps, operator, settings, monkeypatch, django_assert_num_queries
) -> None:
    _, workflow = three_steps
    run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    settings.CELERY_BROKER_URL = "memory://"
    monkeypatch.setattr(execution, "PLAN_CACHE_SIZE", 0)  # every plan leaves the cache at once
    with django_assert_num_queries(10) as chain:
        assert workflow_step_run(run_id=run.pk, step="one") == "completed"
    definition = ["SELECT"]  # a successor's claim brings no definition: read apart
    assert kinds(chain) == CLAIM + HANDED_ON + definition + HANDED_ON + definition + RESULT[:-1] + ["UPDATE", "RELEASE"]
    run.refresh_from_db()
    assert run.status == "completed"


@pytest.mark.django_db(transaction=False)
def test_a_successor_claimed_by_its_predecessors_finish_reads_its_answer(pipeline, alice_actor, settings) -> None:
    run = workflow_run_start(workflow=pipeline, actor=alice_actor, message="Article : Lorem ipsum")
    settings.CELERY_BROKER_URL = "memory://"
    assert workflow_step_run(run_id=run.pk, step="lecture") == "completed"
    run.refresh_from_db()
    lecture, critique = steps_of(run)["lecture"], steps_of(run)["critique"]
    assert (run.status, critique.status, critique.attempts) == ("completed", "completed", 1)
    assert critique.input == lecture.output["answer"] and lecture.output["answer"].startswith("[echo ")
    assert run.outputs == {"final": critique.output["answer"]}


@pytest.mark.django_db(transaction=False)
def test_a_finish_claims_no_successor_in_a_cancelled_run(
    three_steps, operator, settings, django_assert_num_queries, django_capture_on_commit_callbacks
) -> None:
    _, workflow = three_steps
    run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    settings.CELERY_BROKER_URL = "memory://"
    now = timezone.now()
    claim = store.step_claim(run_id=run.pk, name="one", now=now, lease_until=now + timedelta(seconds=60))
    plan = plan_for(claim.run_id, claim.definition)
    prepared = _step_start(claim, plan, now)
    workflow_run_cancel(run=run, actor=operator)  # while one's model answers

    with django_capture_on_commit_callbacks() as dispatched, django_assert_num_queries(1) as result:
        assert _step_turn(claim, plan, prepared) == ("completed", None)
    assert kinds(result) == HANDED_ON  # the statement that would have claimed two
    assert dispatched == []
    steps = steps_of(run)
    # A running step finishes and is recorded; nothing starts after a cancel.
    assert [steps[name].status for name in ("one", "two", "three")] == ["completed", "cancelled", "cancelled"]
    assert steps["two"].attempts == 0


@pytest.mark.parametrize("worker", [False, True], ids=["inline", "worker"])
@pytest.mark.django_db(transaction=False)
def test_a_step_that_lost_its_claim_during_its_turn_keeps_the_turn_and_drops_the_result(
    three_steps, operator, settings, worker, django_assert_num_queries, django_capture_on_commit_callbacks, caplog
) -> None:
    _, workflow = three_steps
    run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
    if worker:  # the finish would also claim the lone successor: it must not
        settings.CELERY_BROKER_URL = "memory://"
    now = timezone.now()
    claim = store.step_claim(run_id=run.pk, name="one", now=now, lease_until=now + timedelta(seconds=60))
    plan = plan_for(claim.run_id, claim.definition)
    prepared = _step_start(claim, plan, now)
    # Its lease passed while the model answered, and another attempt took the step.
    StepRun.objects.filter(pk=claim.step_id).update(attempts=claim.attempts + 1)

    with django_capture_on_commit_callbacks() as dispatched, django_assert_num_queries(1) as result:
        assert _step_turn(claim, plan, prepared) == (None, None)
    assert kinds(result) == COMPOSED  # the turn, its log and the finish that matched nothing
    assert dispatched == []
    assert "lost its claim" in caplog.text
    step = StepRun.objects.get(pk=claim.step_id)
    assert (step.status, step.turn_id, step.attempts) == ("running", None, claim.attempts + 1)
    assert steps_of(run)["two"].status == "pending"
    run.refresh_from_db()
    assert (run.context.get("steps", {}), run.input_tokens) == ({}, 0)
    turn = AgentTurn.objects.get(pk=prepared.turn.pk)
    assert (turn.status, turn.debug_logs.count()) == ("succeeded", 1)
