"""The pivot format: validation, compiled paths, mapping, conditions and outputs.

Pure functions over plain data, no database: `compile_definition` checks a definition
and returns a `Plan` (every path compiled once) or raises `DefinitionError` listing
every problem with its location (`steps[1].input_mapping.text: …`). The executor
(`workflows.execution`) asks the plan which steps are ready and what they receive.

The run context a plan reads:
`{"inputs": {"message": …, …}, "steps": {"<name>": {"status", "output": {"answer",
"text"}, "usage"}}}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

FORMAT_VERSION = 1
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
MAX_STEPS = 100
MAX_TIMEOUT_SECONDS = 48 * 3600
MAX_RETRIES = 10
ANSWER_SEPARATOR = "\n\n"
DEFINITION_KEYS = {"version", "steps", "outputs", "description", "inputs"}
STEP_KEYS = {
    "name",
    "agent_name",
    "input_mapping",
    "output_key",
    "depends_on",
    "when",
    "timeout_seconds",
    "retries",
    "description",
    "type",
}
STEP_FIELDS = ("status", "output", "usage")
_SEGMENT = re.compile(r"""\.([A-Za-z0-9_-]+)|\[([0-9]+)\]|\[(?:'([^']*)'|"([^"]*)")\]""")


class DefinitionError(Exception):
    """A definition that does not validate; `problems` lists each one with its location."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


# --- paths and values -----------------------------------------------------------------
@dataclass(frozen=True)
class Path:
    """A compiled `$.…` path: its segments, evaluated over a run context."""

    text: str
    segments: tuple[str | int, ...]

    def evaluate(self, context: dict) -> Any:
        value: Any = context
        for segment in self.segments:
            if isinstance(segment, int):
                if not isinstance(value, list) or not -len(value) <= segment < len(value):
                    return None
                value = value[segment]
            else:
                if not isinstance(value, dict) or segment not in value:
                    return None
                value = value[segment]
        return value

    @property
    def step(self) -> str | None:
        """The step this path reads, when it reads one."""
        return self.segments[1] if self.segments[0] == "steps" and len(self.segments) > 1 else None


def parse_path(text: str) -> Path:
    """Compile `text` (`$.inputs.message`, `$.steps.a.output.answer`, `$.steps["x"]`,
    `$.inputs.items[0]`); raises ValueError saying what is wrong."""
    if not text.startswith("$"):
        raise ValueError(f"'{text}' is not a path: it must start with '$'")
    segments: list[str | int] = []
    position = 1
    while position < len(text):
        match = _SEGMENT.match(text, position)
        if match is None:
            raise ValueError(f"'{text}' is not a path: unexpected '{text[position:]}' (use .name, [0] or ['name'])")
        name, index, single, double = match.groups()
        if index is not None:
            segments.append(int(index))
        else:
            segments.append(name if name is not None else single if single is not None else double)
        position = match.end()
    if not segments or segments[0] not in ("inputs", "steps"):
        raise ValueError(f"'{text}' must start at $.inputs or $.steps.<name>")
    if segments[0] == "steps":
        if len(segments) < 2 or not isinstance(segments[1], str):
            raise ValueError(f"'{text}' must name a step: $.steps.<name>.output.answer")
        if len(segments) > 2 and segments[2] not in STEP_FIELDS:
            raise ValueError(f"'{text}': a step has {', '.join(STEP_FIELDS)}, not '{segments[2]}'")
    return Path(text=text, segments=tuple(segments))


@dataclass(frozen=True)
class Literal:
    value: Any

    def evaluate(self, context: dict) -> Any:
        return self.value


def parse_value(raw: Any) -> Path | Literal:
    """A string starting with `$` is a path; `{"literal": x}` is x; anything else is
    itself."""
    if isinstance(raw, str) and raw.startswith("$"):
        return parse_path(raw)
    if isinstance(raw, dict) and set(raw) == {"literal"}:
        return Literal(raw["literal"])
    return Literal(raw)


def as_text(value: Any) -> str:
    """How a mapped or output value reads as text: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# --- the plan -------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    index: int
    name: str
    agent_name: str
    mapping: tuple[tuple[str, Path | Literal], ...]
    output_key: str | None
    depends_on: tuple[str, ...]
    when: Path | None
    timeout_seconds: int | None
    retries: int

    @property
    def location(self) -> str:
        return f"steps[{self.index}]"

    @property
    def reads(self) -> tuple[str, ...] | None:
        """The steps whose context entries this step reads (its dependencies, and the
        steps its mapping and condition name); None when a path reads every step."""
        paths = [value for _, value in self.mapping if isinstance(value, Path)] + [self.when] * bool(self.when)
        if any(path.segments[:1] == ("steps",) and path.step is None for path in paths):
            return None
        return tuple(sorted({*self.depends_on, *(path.step for path in paths if path.step)}))


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    outputs: tuple[tuple[str, Path | Literal], ...] | None
    by_name: dict[str, Step] = field(default_factory=dict, compare=False)
    dependents: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)

    @property
    def agent_names(self) -> list[str]:
        return sorted({step.agent_name for step in self.steps})

    def roots(self) -> list[Step]:
        return [step for step in self.steps if not step.depends_on]

    def ready(self, context: dict) -> list[Step]:
        """Steps not yet done whose dependencies all are (completed or skipped), roots
        included: what a resumed or stalled run sends again."""
        done = context.get("steps", {})
        return [step for step in self.steps if _is_ready(step, done)]

    def ready_after(self, name: str, context: dict) -> list[Step]:
        """The dependents of `name` that became ready in `context` (see `ready`)."""
        done = context.get("steps", {})
        return [self.by_name[other] for other in self.dependents.get(name, ()) if _is_ready(self.by_name[other], done)]

    def successor(self, name: str) -> Step | None:
        """The step that `name`'s completion alone makes ready, when there is one: its
        only dependent, depending on it alone (a chain's next step)."""
        dependents = self.dependents.get(name, ())
        if len(dependents) != 1 or self.by_name[dependents[0]].depends_on != (name,):
            return None
        return self.by_name[dependents[0]]

    def is_complete(self, context: dict) -> bool:
        done = context.get("steps", {})
        return all(done.get(step.name, {}).get("status") in ("completed", "skipped") for step in self.steps)

    def order(self) -> list[str]:
        """Step names in a dependency order (a step after everything it depends on)."""
        placed: list[str] = []
        remaining = list(self.steps)
        while remaining:
            for step in remaining:
                if all(dep in placed for dep in step.depends_on):
                    placed.append(step.name)
                    remaining.remove(step)
                    break
        return placed


# --- what a step receives, whether it runs, what the run returns ----------------------
def _is_ready(step: Step, done: dict) -> bool:
    return step.name not in done and all(
        done.get(dep, {}).get("status") in ("completed", "skipped") for dep in step.depends_on
    )


class MappingError(Exception):
    """A mapped path that resolved to nothing at run time."""


def step_message(step: Step, context: dict) -> str:
    """The message a step's agent receives. An empty mapping passes the run's message
    (or, without one, its inputs as JSON); one mapped value is sent as it is; several
    are sent as labelled blocks, in mapping order."""
    if not step.mapping:
        inputs = context.get("inputs", {})
        message = inputs.get("message")
        if isinstance(message, str) and message.strip():
            return message
        return as_text(inputs)
    blocks = []
    for label, value in step.mapping:
        resolved = value.evaluate(context)
        if resolved is None or resolved == "":
            where = f"{step.location}.input_mapping.{label}"
            what = value.text if isinstance(value, Path) else "the literal"
            raise MappingError(f"{where}: {what} resolved to nothing.")
        blocks.append((label, as_text(resolved)))
    if len(blocks) == 1:
        return blocks[0][1]
    return ANSWER_SEPARATOR.join(f"## {label}\n{text}" for label, text in blocks)


def skip_reason(step: Step, context: dict) -> str | None:
    """Why `step` is skipped (a skipped dependency, or a false `when`), or None."""
    done = context.get("steps", {})
    for dep in step.depends_on:
        if done.get(dep, {}).get("status") == "skipped":
            return f"Skipped: step '{dep}' was skipped."
    if step.when is not None and not step.when.evaluate(context):
        return f"Skipped: {step.when.text} is not true."
    return None


def run_outputs(plan: Plan, context: dict) -> dict:
    """The run's outputs: the `outputs` block evaluated, or else each step's answer
    under its `output_key` (and, when no step names one, the last steps' answers under
    their names)."""
    if plan.outputs is not None:
        return {key: value.evaluate(context) for key, value in plan.outputs}
    steps = context.get("steps", {})
    keyed = [step for step in plan.steps if step.output_key]
    if not keyed:
        keyed = [step for step in plan.steps if not plan.dependents.get(step.name)]
    return {
        step.output_key or step.name: ((steps.get(step.name) or {}).get("output") or {}).get("answer") for step in keyed
    }


def run_answer(outputs: dict) -> str:
    """The run's answer: its non-empty string outputs, joined."""
    return ANSWER_SEPARATOR.join(value for value in outputs.values() if isinstance(value, str) and value.strip())


def step_output(answer: str) -> dict:
    """A step's output in the run context: `text` is an alias of `answer`."""
    return {"answer": answer, "text": answer}


# --- validation -----------------------------------------------------------------------
def compile_definition(definition: Any, *, agents: dict[str, str] | None = None) -> Plan:
    """Validate `definition` and return its Plan, or raise DefinitionError with every
    problem. `agents` maps each agent key the workspace can run to a problem with it
    ("" when it is usable); None skips the agent checks."""
    problems: list[str] = []
    if not isinstance(definition, dict):
        raise DefinitionError(["definition: must be a JSON object."])
    for key in sorted(set(definition) - DEFINITION_KEYS):
        problems.append(f"{key}: unknown key (expected {', '.join(sorted(DEFINITION_KEYS))}).")
    version = definition.get("version")
    if "version" not in definition:
        problems.append("version: required; use 1.")
    elif version != FORMAT_VERSION or isinstance(version, bool):
        problems.append(f"version: must be 1, not {json.dumps(version)}.")
    if "description" in definition and not isinstance(definition["description"], str):
        problems.append("description: must be a string.")
    if "inputs" in definition and not isinstance(definition["inputs"], (dict, list)):
        problems.append("inputs: must be an object or a list describing the run's inputs.")
    raw_steps = definition.get("steps")
    if not isinstance(raw_steps, list):
        problems.append("steps: required, a list of steps.")
        raw_steps = []
    elif not raw_steps:
        problems.append("steps: give at least one step.")
    elif len(raw_steps) > MAX_STEPS:
        # Said before anything is compiled: a 10 000-step document would otherwise
        # hold the process for its whole validation, only to be refused.
        raise DefinitionError([*problems, f"steps: at most {MAX_STEPS} steps, not {len(raw_steps)}."])
    names = _step_names(raw_steps, problems)
    named_at = {position: name for name, position in names.items()}
    steps = [_compile_step(index, raw, names, named_at, agents, problems) for index, raw in enumerate(raw_steps)]
    steps = [step for step in steps if step is not None]
    by_name = {step.name: step for step in steps}
    _check_cycles(steps, by_name, problems)
    _check_step_paths(steps, by_name, names, complete=len(steps) == len(raw_steps), problems=problems)
    outputs = _compile_outputs(definition, names, problems)
    _check_output_keys(raw_steps, problems)
    if problems:
        raise DefinitionError(problems)
    dependents: dict[str, list[str]] = {step.name: [] for step in steps}
    for step in steps:
        for dep in step.depends_on:
            dependents[dep].append(step.name)
    return Plan(
        steps=tuple(steps),
        outputs=outputs,
        by_name=by_name,
        dependents={name: tuple(others) for name, others in dependents.items()},
    )


def _step_names(raw_steps: list, problems: list[str]) -> dict[str, int]:
    names: dict[str, int] = {}
    for index, raw in enumerate(raw_steps):
        if not isinstance(raw, dict):
            continue
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            problems.append(f"steps[{index}].name: required, a non-empty string.")
        elif not NAME_PATTERN.match(name):
            problems.append(
                f"steps[{index}].name: '{name}' may use letters, digits, '_' and '-' only "
                "(it is read as $.steps.<name>)."
            )
        elif name in names:
            problems.append(f"steps[{index}].name: '{name}' is already the name of steps[{names[name]}].")
        else:
            names[name] = index
    return names


def _compile_step(
    index: int,
    raw: Any,
    names: dict[str, int],
    named_at: dict[int, str],
    agents: dict[str, str] | None,
    problems: list[str],
) -> Step | None:
    where = f"steps[{index}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be an object.")
        return None
    before = len(problems)
    for key in sorted(set(raw) - STEP_KEYS):
        problems.append(f"{where}.{key}: unknown key (expected {', '.join(sorted(STEP_KEYS))}).")
    if "type" in raw and raw["type"] != "agent":
        problems.append(f'{where}.type: only "agent" steps exist.')
    if "description" in raw and not isinstance(raw["description"], str):
        problems.append(f"{where}.description: must be a string.")
    agent_name = raw.get("agent_name")
    if not isinstance(agent_name, str) or not agent_name.strip():
        problems.append(f"{where}.agent_name: required, a non-empty string.")
    elif agents is not None:
        if agent_name not in agents:
            problems.append(f"{where}.agent_name: no agent '{agent_name}' in this workspace.")
        elif agents[agent_name]:
            problems.append(f"{where}.agent_name: {agents[agent_name]}")
    mapping = _compile_mapping(where, raw.get("input_mapping", {}), problems)
    output_key = raw.get("output_key")
    if output_key is not None and (not isinstance(output_key, str) or not output_key.strip()):
        problems.append(f"{where}.output_key: must be a non-empty string.")
    depends_on = _compile_depends_on(index, raw, names, named_at.get(index - 1), problems)
    when = None
    if "when" in raw:
        if not isinstance(raw["when"], str) or not raw["when"].startswith("$"):
            problems.append(f"{where}.when: must be a path such as $.inputs.flag.")
        else:
            when = _compile_path(f"{where}.when", raw["when"], problems)
    timeout = _bounded_int(where, raw, "timeout_seconds", 1, MAX_TIMEOUT_SECONDS, problems)
    retries = _bounded_int(where, raw, "retries", 0, MAX_RETRIES, problems)
    # A nameless or duplicate step was reported by _step_names.
    name = raw.get("name")
    if len(problems) > before or not isinstance(name, str) or names.get(name) != index:
        return None
    return Step(
        index=index,
        name=name,
        agent_name=agent_name,
        mapping=mapping,
        output_key=output_key,
        depends_on=depends_on,
        when=when,
        timeout_seconds=timeout,
        retries=retries or 0,
    )


def _compile_mapping(where: str, raw: Any, problems: list[str]) -> tuple[tuple[str, Path | Literal], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        problems.append(f"{where}.input_mapping: must be an object of label: path or value.")
        return ()
    compiled = []
    for label, value in raw.items():
        if isinstance(value, str) and value.startswith("$"):
            path = _compile_path(f"{where}.input_mapping.{label}", value, problems)
            if path is not None:
                compiled.append((label, path))
        else:
            compiled.append((label, parse_value(value)))
    return tuple(compiled)


def _compile_path(where: str, text: str, problems: list[str]) -> Path | None:
    try:
        return parse_path(text)
    except ValueError as exc:
        problems.append(f"{where}: {exc}.")
        return None


def _compile_depends_on(
    index: int, raw: dict, names: dict[str, int], previous: str | None, problems: list[str]
) -> tuple[str, ...]:
    where = f"steps[{index}].depends_on"
    if "depends_on" not in raw:
        # Absent: the previous step (the pivot format's pipelines stay linear).
        return (previous,) if previous is not None else ()
    value = raw["depends_on"]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.append(f"{where}: must be a list of step names ([] for a first step).")
        return ()
    for item in value:
        if item == raw.get("name"):
            problems.append(f"{where}: a step cannot depend on itself.")
        elif item not in names:
            problems.append(f"{where}: no step '{item}'.")
    if len(set(value)) != len(value):
        problems.append(f"{where}: lists a step twice.")
    return tuple(dict.fromkeys(value))


def _bounded_int(where: str, raw: dict, key: str, low: int, high: int, problems: list[str]) -> int | None:
    if key not in raw or raw[key] is None:
        return None
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{where}.{key}: must be an integer from {low} to {high}.")
        return None
    return value


def _check_cycles(steps: list[Step], by_name: dict[str, Step], problems: list[str]) -> None:
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> bool:
        if state.get(name) == "done" or name not in by_name:
            return False
        if state.get(name) == "open":
            cycle = [*trail[trail.index(name) :], name]
            problems.append(f"steps: depends_on forms a cycle: {' → '.join(cycle)}.")
            return True
        state[name] = "open"
        for dep in by_name[name].depends_on:
            if visit(dep, [*trail, name]):
                return True
        state[name] = "done"
        return False

    for step in steps:
        if visit(step.name, []):
            return


def _ancestors(name: str, by_name: dict[str, Step]) -> set[str]:
    seen: set[str] = set()
    stack = list(by_name[name].depends_on)
    while stack:
        dep = stack.pop()
        if dep not in seen and dep in by_name:
            seen.add(dep)
            stack.extend(by_name[dep].depends_on)
    return seen


def _check_step_paths(
    steps: list[Step], by_name: dict[str, Step], names: dict[str, int], *, complete: bool, problems: list[str]
) -> None:
    """A step reads only steps it (transitively) depends on: anything else might not
    have run yet when it starts."""
    for step in steps:
        ancestors = _ancestors(step.name, by_name)
        paths = [(f"{step.location}.input_mapping.{label}", value) for label, value in step.mapping]
        if step.when is not None:
            paths.append((f"{step.location}.when", step.when))
        for where, value in paths:
            if not isinstance(value, Path) or value.step is None:
                continue
            if value.step not in names:
                problems.append(f"{where}: no step '{value.step}'.")
            # With a broken step the dependency chain is unknown: say nothing rather than guess.
            elif complete and value.step not in ancestors:
                problems.append(
                    f"{where}: step '{value.step}' is not a dependency of '{step.name}'; add it to depends_on."
                )


def _compile_outputs(definition: dict, names: dict[str, int], problems: list[str]) -> tuple | None:
    if "outputs" not in definition:
        return None
    raw = definition["outputs"]
    if not isinstance(raw, dict):
        problems.append("outputs: must be an object of name: path or value.")
        return None
    compiled = []
    for key, value in raw.items():
        where = f"outputs.{key}"
        if isinstance(value, str) and value.startswith("$"):
            path = _compile_path(where, value, problems)
            if path is None:
                continue
            if path.step is not None and path.step not in names:
                problems.append(f"{where}: no step '{path.step}'.")
                continue
            compiled.append((key, path))
        else:
            compiled.append((key, parse_value(value)))
    return tuple(compiled)


def _check_output_keys(raw_steps: list, problems: list[str]) -> None:
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_steps):
        key = raw.get("output_key") if isinstance(raw, dict) else None
        if not isinstance(key, str) or not key.strip():
            continue
        if key in seen:
            problems.append(f"steps[{index}].output_key: '{key}' is already the output_key of steps[{seen[key]}].")
        else:
            seen[key] = index


# --- the published schema -------------------------------------------------------------
def definition_schema() -> dict:
    """The pivot format v1 (with AiHummer's additions) as a JSON Schema."""
    value = {"description": 'A path ($.inputs… or $.steps.<name>…), {"literal": …}, or any other JSON value.'}
    path = {"type": "string", "pattern": r"^\$"}
    step = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "agent_name"],
        "properties": {
            "name": {"type": "string", "pattern": NAME_PATTERN.pattern},
            "agent_name": {"type": "string", "minLength": 1},
            "type": {"const": "agent"},
            "description": {"type": "string"},
            "input_mapping": {
                "type": "object",
                "additionalProperties": value,
                "description": "Empty: the run's message (or its inputs as JSON). One value is sent as it is; "
                "several as labelled blocks in mapping order.",
            },
            "output_key": {"type": "string", "minLength": 1},
            "depends_on": {
                "type": "array",
                "items": {"type": "string"},
                "uniqueItems": True,
                "description": "Absent: the previous step; []: a first step. Steps whose dependencies are done "
                "run in parallel.",
            },
            "when": {
                **path,
                "description": "The step runs when this path's value is truthy; else it is skipped, "
                "and so are its dependents.",
            },
            "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECONDS},
            "retries": {"type": "integer", "minimum": 0, "maximum": MAX_RETRIES, "default": 0},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "AiHummer workflow definition (pivot format v1)",
        "type": "object",
        "additionalProperties": False,
        "required": ["version", "steps"],
        "properties": {
            "version": {"const": FORMAT_VERSION},
            "description": {"type": "string"},
            "inputs": {"type": ["object", "array"], "description": "Accepted for Synapse compatibility."},
            "steps": {"type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": step},
            "outputs": {
                "type": "object",
                "additionalProperties": value,
                "description": "Absent: each step's answer under its output_key.",
            },
        },
    }
