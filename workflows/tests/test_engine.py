"""The pivot format, without a database: every validation rule and its message,
paths, literals, mapping, conditions, skip propagation, readiness and outputs."""

from __future__ import annotations

import copy

import pytest

from aihummer.tests.factories import PIPELINE
from workflows.engine import (
    DefinitionError,
    Literal,
    MappingError,
    compile_definition,
    definition_schema,
    parse_path,
    parse_value,
    run_answer,
    run_outputs,
    skip_reason,
    step_message,
    step_output,
)

AGENTS = {"lecteur": "", "critique": "", "off": "agent 'off' is disabled; enable it or name another."}


def problems(definition: object, agents: dict | None = AGENTS) -> list[str]:
    with pytest.raises(DefinitionError) as caught:
        compile_definition(definition, agents=agents)
    return caught.value.problems


def step(name: str, agent: str = "lecteur", **extra: object) -> dict:
    return {"name": name, "agent_name": agent, **extra}


def done(**statuses: str) -> dict:
    """A run context where each named step finished with `status` (answer = its name)."""
    return {
        "inputs": {"message": "Bonjour"},
        "steps": {
            name: {"status": status, "output": step_output(f"answer of {name}") if status == "completed" else None}
            for name, status in statuses.items()
        },
    }


# --- the seed's format ----------------------------------------------------------------
def test_the_seed_pipeline_compiles_as_a_linear_plan() -> None:
    plan = compile_definition(PIPELINE, agents=AGENTS)
    assert [s.name for s in plan.steps] == ["lecture", "critique"]
    assert plan.by_name["lecture"].depends_on == ()
    assert plan.by_name["critique"].depends_on == ("lecture",)
    assert [s.name for s in plan.roots()] == ["lecture"]
    assert plan.agent_names == ["critique", "lecteur"]


def test_synapse_optional_keys_are_accepted() -> None:
    definition = {
        "version": 1,
        "description": "Pipeline",
        "inputs": {"message": {"type": "string"}},
        "steps": [step("a", type="agent", description="Lit le texte")],
    }
    assert compile_definition(definition, agents=AGENTS).steps[0].name == "a"


# --- every validation rule, every problem at once -------------------------------------
def test_a_definition_must_be_an_object() -> None:
    assert problems([1, 2]) == ["definition: must be a JSON object."]


def test_version_steps_and_unknown_top_level_keys() -> None:
    assert problems({"steps": [], "extra": 1}) == [
        "extra: unknown key (expected description, inputs, outputs, steps, version).",
        "version: required; use 1.",
        "steps: give at least one step.",
    ]
    assert problems({"version": 2, "steps": "a"}) == ["version: must be 1, not 2.", "steps: required, a list of steps."]
    assert problems({"version": True, "steps": [step("a")]}) == ["version: must be 1, not true."]


def test_description_and_inputs_types() -> None:
    assert problems({"version": 1, "description": 3, "inputs": "x", "steps": [step("a")]}) == [
        "description: must be a string.",
        "inputs: must be an object or a list describing the run's inputs.",
    ]


def test_step_names_are_required_unique_and_addressable() -> None:
    definition = {
        "version": 1,
        "steps": [step("a"), {"agent_name": "lecteur"}, step("a"), step("has space"), step(" "), step(["x"])],
    }
    assert problems(definition) == [
        "steps[1].name: required, a non-empty string.",
        "steps[2].name: 'a' is already the name of steps[0].",
        "steps[3].name: 'has space' may use letters, digits, '_' and '-' only (it is read as $.steps.<name>).",
        "steps[4].name: required, a non-empty string.",
        "steps[5].name: required, a non-empty string.",
    ]


def test_steps_must_be_objects_with_known_keys_and_agent_steps_only() -> None:
    definition = {"version": 1, "steps": ["a", step("b", colour="red", type="tool", description=4)]}
    assert problems(definition) == [
        "steps[0]: must be an object.",
        "steps[1].colour: unknown key (expected agent_name, depends_on, description, input_mapping, name, "
        "output_key, retries, timeout_seconds, type, when).",
        'steps[1].type: only "agent" steps exist.',
        "steps[1].description: must be a string.",
    ]


def test_agents_must_exist_and_be_usable() -> None:
    definition = {"version": 1, "steps": [step("a", agent="ghost"), step("b", agent="off"), {"name": "c"}]}
    assert problems(definition) == [
        "steps[0].agent_name: no agent 'ghost' in this workspace.",
        "steps[1].agent_name: agent 'off' is disabled; enable it or name another.",
        "steps[2].agent_name: required, a non-empty string.",
    ]


def test_agent_checks_are_skipped_without_an_agent_table() -> None:
    assert compile_definition({"version": 1, "steps": [step("a", agent="ghost")]}, agents=None)


def test_mapping_must_be_an_object_of_paths_or_values() -> None:
    definition = {
        "version": 1,
        "steps": [
            step("a", input_mapping=["$.inputs.message"]),
            step("b", input_mapping={"x": "$.outputs.a", "y": "$steps", "z": "$.steps", "w": "$.steps.a.answer"}),
        ],
    }
    assert problems(definition) == [
        "steps[0].input_mapping: must be an object of label: path or value.",
        "steps[1].input_mapping.x: '$.outputs.a' must start at $.inputs or $.steps.<name>.",
        "steps[1].input_mapping.y: '$steps' is not a path: unexpected 'steps' (use .name, [0] or ['name']).",
        "steps[1].input_mapping.z: '$.steps' must name a step: $.steps.<name>.output.answer.",
        "steps[1].input_mapping.w: '$.steps.a.answer': a step has status, output, usage, not 'answer'.",
    ]


def test_paths_read_only_transitive_dependencies() -> None:
    definition = {
        "version": 1,
        "steps": [
            step("a", depends_on=[]),
            step("b", depends_on=[]),
            step("c", depends_on=["a"], input_mapping={"x": "$.steps.b.output.answer", "y": "$.steps.zz.output"}),
            step("d", depends_on=["c"], input_mapping={"x": "$.steps.a.output.answer"}, when="$.steps.d.status"),
        ],
    }
    assert problems(definition) == [
        "steps[2].input_mapping.x: step 'b' is not a dependency of 'c'; add it to depends_on.",
        "steps[2].input_mapping.y: no step 'zz'.",
        "steps[3].when: step 'd' is not a dependency of 'd'; add it to depends_on.",
    ]


def test_depends_on_must_name_other_existing_steps_once() -> None:
    definition = {
        "version": 1,
        "steps": [
            step("a", depends_on="b"),
            step("b", depends_on=["b", "nope"]),
            step("c", depends_on=["a", "a"]),
        ],
    }
    assert problems(definition) == [
        "steps[0].depends_on: must be a list of step names ([] for a first step).",
        "steps[1].depends_on: a step cannot depend on itself.",
        "steps[1].depends_on: no step 'nope'.",
        "steps[2].depends_on: lists a step twice.",
    ]


def test_cycles_are_reported_with_their_path() -> None:
    definition = {
        "version": 1,
        "steps": [step("a", depends_on=["c"]), step("b", depends_on=["a"]), step("c", depends_on=["b"])],
    }
    assert problems(definition) == ["steps: depends_on forms a cycle: a → c → b → a."]


def test_when_timeout_and_retries_are_checked() -> None:
    definition = {
        "version": 1,
        "steps": [
            step("a", when="inputs.flag", timeout_seconds=0, retries=11),
            step("b", when="$.nope", timeout_seconds="10", retries=True),
        ],
    }
    assert problems(definition) == [
        "steps[0].when: must be a path such as $.inputs.flag.",
        "steps[0].timeout_seconds: must be an integer from 1 to 172800.",
        "steps[0].retries: must be an integer from 0 to 10.",
        "steps[1].when: '$.nope' must start at $.inputs or $.steps.<name>.",
        "steps[1].timeout_seconds: must be an integer from 1 to 172800.",
        "steps[1].retries: must be an integer from 0 to 10.",
    ]


def test_output_keys_are_non_empty_and_unique() -> None:
    definition = {
        "version": 1,
        "steps": [step("a", output_key="r"), step("b", output_key="r"), step("c", output_key="")],
    }
    assert problems(definition) == [
        "steps[2].output_key: must be a non-empty string.",
        "steps[1].output_key: 'r' is already the output_key of steps[0].",
    ]


def test_outputs_must_be_an_object_reading_existing_steps() -> None:
    assert problems({"version": 1, "steps": [step("a")], "outputs": ["x"]}) == [
        "outputs: must be an object of name: path or value."
    ]
    assert problems({"version": 1, "steps": [step("a")], "outputs": {"x": "$.steps.b.output", "y": "$.z"}}) == [
        "outputs.x: no step 'b'.",
        "outputs.y: '$.z' must start at $.inputs or $.steps.<name>.",
    ]


def test_too_many_steps() -> None:
    definition = {"version": 1, "steps": [step(f"s{i}") for i in range(101)]}
    assert problems(definition) == ["steps: at most 100 steps, not 101."]


def test_too_many_steps_are_refused_before_any_is_compiled() -> None:
    """Issue 24, item 12: 10 000 broken steps held a process 18-48 s, each compiled
    (and depends_on resolved quadratically) only for the count to refuse them."""
    broken = [{"name": f"s{i}", "agent_name": "", "input_mapping": "x", "depends_on": ["ghost"]} for i in range(10_000)]

    assert problems({"version": 2, "steps": broken}) == [
        "version: must be 1, not 2.",
        "steps: at most 100 steps, not 10000.",
    ]


# --- paths and literals ---------------------------------------------------------------
def test_paths_compile_once_and_evaluate_over_the_context() -> None:
    context = {"inputs": {"items": ["x", {"k": "v"}], "odd key": 1}, "steps": {"a-1": {"output": {"answer": "A"}}}}
    assert parse_path("$.inputs.items[1].k").evaluate(context) == "v"
    assert parse_path("$.inputs['odd key']").evaluate(context) == 1
    assert parse_path('$.steps["a-1"].output.answer').evaluate(context) == "A"
    assert parse_path("$.steps.a-1.output.answer").segments == ("steps", "a-1", "output", "answer")
    assert parse_path("$.inputs.items[5]").evaluate(context) is None
    assert parse_path("$.inputs.missing.deeper").evaluate(context) is None
    assert parse_path("$.inputs").evaluate(context) == context["inputs"]


def test_a_literal_escapes_a_string_that_starts_with_a_dollar() -> None:
    assert parse_value({"literal": "$5 off"}) == Literal("$5 off")
    assert parse_value("plain text") == Literal("plain text")
    assert parse_value({"a": 1}) == Literal({"a": 1})
    assert parse_value(3) == Literal(3)
    assert parse_value("$.inputs.x").text == "$.inputs.x"


# --- what a step receives -------------------------------------------------------------
def compiled_step(**extra: object):
    definition = {"version": 1, "steps": [step("a", depends_on=[]), step("b", depends_on=["a"], **extra)]}
    return compile_definition(definition, agents=AGENTS).by_name["b"]


def test_an_empty_mapping_passes_the_message_or_else_the_inputs() -> None:
    empty = compiled_step(input_mapping={})
    assert step_message(empty, {"inputs": {"message": "Bonjour"}}) == "Bonjour"
    assert step_message(empty, {"inputs": {"topic": "été"}}) == '{"topic": "été"}'
    assert step_message(compiled_step(), {"inputs": {"message": "Bonjour"}}) == "Bonjour"


def test_one_mapped_value_is_sent_as_it_is() -> None:
    single = compiled_step(input_mapping={"text": "$.steps.a.output.answer"})
    assert step_message(single, done(a="completed")) == "answer of a"
    as_text = compiled_step(input_mapping={"text": "$.steps.a.output.text"})
    assert step_message(as_text, done(a="completed")) == "answer of a"
    structured = compiled_step(input_mapping={"data": "$.inputs"})
    assert step_message(structured, done(a="completed")) == '{"message": "Bonjour"}'


def test_several_values_are_labelled_blocks_in_mapping_order() -> None:
    several = compiled_step(
        input_mapping={"Texte": "$.steps.a.output.answer", "Consigne": {"literal": "$ en euros"}, "Ton": "neutre"}
    )
    assert step_message(several, done(a="completed")) == (
        "## Texte\nanswer of a\n\n## Consigne\n$ en euros\n\n## Ton\nneutre"
    )


def test_a_path_that_resolves_to_nothing_fails_with_its_location() -> None:
    missing = compiled_step(input_mapping={"text": "$.inputs.absent"})
    with pytest.raises(
        MappingError, match=r"^steps\[1\]\.input_mapping\.text: \$\.inputs\.absent resolved to nothing\.$"
    ):
        step_message(missing, done(a="completed"))


# --- conditions and skips -------------------------------------------------------------
def test_when_runs_the_step_only_on_a_truthy_value() -> None:
    conditional = compiled_step(when="$.inputs.publish")
    assert skip_reason(conditional, {"inputs": {"publish": True}, "steps": {"a": {"status": "completed"}}}) is None
    for falsy in (False, 0, "", None, [], {}):
        context = {"inputs": {"publish": falsy}, "steps": {"a": {"status": "completed"}}}
        assert skip_reason(conditional, context) == "Skipped: $.inputs.publish is not true."


def test_dependents_of_a_skipped_step_are_skipped() -> None:
    dependent = compiled_step()
    assert skip_reason(dependent, done(a="skipped")) == "Skipped: step 'a' was skipped."


def test_readiness_follows_the_dag_and_waits_for_every_dependency() -> None:
    definition = {
        "version": 1,
        "steps": [
            step("a", depends_on=[]),
            step("b", depends_on=["a"]),
            step("c", depends_on=["a"]),
            step("d", depends_on=["b", "c"]),
        ],
    }
    plan = compile_definition(definition, agents=AGENTS)
    assert [s.name for s in plan.roots()] == ["a"]
    assert [s.name for s in plan.ready_after("a", done(a="completed"))] == ["b", "c"]
    assert plan.ready_after("b", done(a="completed", b="completed")) == []
    assert [s.name for s in plan.ready_after("c", done(a="completed", b="completed", c="completed"))] == ["d"]
    assert [s.name for s in plan.ready_after("c", done(a="completed", b="skipped", c="completed"))] == ["d"]
    assert plan.ready_after("c", done(a="completed", b="failed", c="completed")) == []
    assert not plan.is_complete(done(a="completed", b="completed", c="completed"))
    assert plan.is_complete(done(a="completed", b="skipped", c="completed", d="skipped"))


def test_a_successor_is_a_steps_only_dependent_depending_on_it_alone() -> None:
    definition = {
        "version": 1,
        "steps": [
            step("a", depends_on=[]),
            step("b", depends_on=["a"]),  # a's only dependent: a's successor
            step("c", depends_on=["b"]),
            step("d", depends_on=["b"]),  # b has two dependents: no successor
            step("e", depends_on=["c", "d"]),  # c's only dependent, but it waits for d too
        ],
    }
    plan = compile_definition(definition, agents=AGENTS)
    assert [getattr(plan.successor(name), "name", None) for name in "abcde"] == ["b", None, None, None, None]


def test_dag_order_puts_every_step_after_its_dependencies() -> None:
    definition = {
        "version": 1,
        "steps": [
            step("d", depends_on=["b", "c"]),
            step("c", depends_on=["a"]),
            step("b", depends_on=["a"]),
            step("a", depends_on=[]),
        ],
    }
    assert compile_definition(definition, agents=AGENTS).order() == ["a", "c", "b", "d"]


# --- outputs and the answer -----------------------------------------------------------
def test_outputs_block_is_evaluated_and_the_answer_joins_string_outputs() -> None:
    plan = compile_definition(PIPELINE, agents=AGENTS)
    outputs = run_outputs(plan, done(lecture="completed", critique="completed"))
    assert outputs == {"final": "answer of critique"}
    assert run_answer(outputs) == "answer of critique"


def test_output_key_names_each_answer_when_outputs_is_absent() -> None:
    definition = copy.deepcopy(PIPELINE)
    del definition["outputs"]
    plan = compile_definition(definition, agents=AGENTS)
    outputs = run_outputs(plan, done(lecture="completed", critique="completed"))
    assert outputs == {"resume": "answer of lecture", "evaluation": "answer of critique"}
    assert run_answer(outputs) == "answer of lecture\n\nanswer of critique"


def test_without_output_keys_the_last_steps_answer_under_their_names() -> None:
    plan = compile_definition({"version": 1, "steps": [step("a"), step("b")]}, agents=AGENTS)
    assert run_outputs(plan, done(a="completed", b="completed")) == {"b": "answer of b"}


def test_the_answer_skips_empty_and_non_string_outputs() -> None:
    assert run_answer({"a": "", "b": None, "c": 3, "d": "kept", "e": "  "}) == "kept"


def test_the_schema_describes_every_step_key() -> None:
    schema = definition_schema()
    step_schema = schema["properties"]["steps"]["items"]
    assert set(step_schema["properties"]) == {
        "name",
        "agent_name",
        "type",
        "description",
        "input_mapping",
        "output_key",
        "depends_on",
        "when",
        "timeout_seconds",
        "retries",
    }
    assert schema["required"] == ["version", "steps"]
