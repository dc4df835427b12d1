"""The step graph (SVG) and the run timeline, drawn from plain data: sequential,
parallel, conditional and skipped steps, and text from a definition always escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from workflows.drawing import GAP_X, NODE_WIDTH, PAD, graph_layout, graph_svg, run_timeline
from workflows.engine import compile_definition

SVG = "{http://www.w3.org/2000/svg}"
SEQUENTIAL = {
    "version": 1,
    "steps": [
        {"name": "a", "agent_name": "lecteur"},
        {"name": "b", "agent_name": "critique", "input_mapping": {"t": "$.steps.a.output.answer"}},
        {"name": "c", "agent_name": "redacteur"},
    ],
}
FAN_IN = {
    "version": 1,
    "steps": [
        {"name": "left", "agent_name": "lecteur", "depends_on": []},
        {"name": "right", "agent_name": "redacteur", "depends_on": []},
        {"name": "join", "agent_name": "critique", "depends_on": ["left", "right"]},
        {"name": "maybe", "agent_name": "critique", "depends_on": ["join"], "when": "$.inputs.review"},
    ],
}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(str(svg))  # well-formed XML, or this raises


def nodes(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-step"): g for g in root.iter(f"{SVG}g")}


def edges(root: ET.Element) -> list[tuple[str, str, str | None]]:
    return [
        (p.get("data-from"), p.get("data-to"), p.get("stroke-dasharray"))
        for p in root.iter(f"{SVG}path")
        if p.get("class") == "aih-edge"
    ]


def test_a_sequential_definition_draws_one_column_per_step() -> None:
    plan = compile_definition(SEQUENTIAL)
    assert graph_layout(plan) == {"a": (0, 0), "b": (1, 0), "c": (2, 0)}
    root = parse(graph_svg(plan))
    assert list(nodes(root)) == ["a", "b", "c"]
    assert edges(root) == [("a", "b", None), ("b", "c", None)]
    xs = [float(g.find(f"{SVG}rect").get("x")) for g in nodes(root).values()]
    assert xs == [PAD, PAD + NODE_WIDTH + GAP_X, PAD + 2 * (NODE_WIDTH + GAP_X)]
    assert root.get("aria-label") == "Step graph: 3 steps"


def test_parallel_branches_share_a_column_and_a_condition_is_dashed() -> None:
    plan = compile_definition(FAN_IN)
    assert graph_layout(plan) == {"left": (0, 0), "right": (0, 1), "join": (1, 0), "maybe": (2, 0)}
    root = parse(graph_svg(plan))
    assert edges(root) == [("left", "join", None), ("right", "join", None), ("join", "maybe", "5 4")]
    maybe = nodes(root)["maybe"]
    assert maybe.get("class") == "aih-node aih-conditional"
    assert maybe.find(f"{SVG}rect").get("stroke-dasharray") == "5 4"
    assert [t.text for t in maybe.iter(f"{SVG}text")] == ["maybe", "when $.inputs.review"]
    assert maybe.find(f"{SVG}title").text == "maybe · agent critique · runs when $.inputs.review is true"
    assert nodes(root)["left"].get("class") == "aih-node"


def test_statuses_colour_the_boxes_of_a_run() -> None:
    statuses = {"left": "completed", "right": "failed", "join": "pending", "maybe": "skipped"}
    root = parse(graph_svg(compile_definition(FAN_IN), statuses))
    assert {name: g.get("data-status") for name, g in nodes(root).items()} == statuses
    assert nodes(root)["right"].find(f"{SVG}rect").get("fill") == "#c53030"


def test_text_from_a_definition_is_escaped() -> None:
    definition = {"version": 1, "steps": [{"name": "a", "agent_name": '<script>alert("x")</script>'}]}
    svg = str(graph_svg(compile_definition(definition)))
    assert "<script>" not in svg
    texts = [t.text for t in parse(svg).iter(f"{SVG}text")]
    assert texts == ["a", '<script>alert("x")</script>']


T0 = datetime(2026, 11, 30, 20, 0, tzinfo=UTC)


def at(seconds: float | None) -> datetime | None:
    return None if seconds is None else T0 + timedelta(seconds=seconds)


def step(
    name: str,
    status: str,
    start: float | None = None,
    end: float | None = None,
    *,
    earlier: list[tuple[float, float, str]] = (),
    retry: float | None = None,
) -> SimpleNamespace:
    log = [
        {"attempt": number, "started_at": at(s).isoformat(), "ended_at": at(e).isoformat(), "error": error}
        for number, (s, e, error) in enumerate(earlier, start=1)
    ]
    attempts = len(log) + (start is not None and status != "pending")
    return SimpleNamespace(
        name=name,
        status=status,
        started_at=at(start),
        finished_at=at(end),
        attempts=attempts,
        attempt_log=log,
        retry_at=at(retry),
    )


def test_a_sequential_run_draws_bars_one_after_the_other() -> None:
    timeline = run_timeline([step("a", "completed", 0, 1), step("b", "completed", 1, 4)], now=T0)
    assert timeline.span_ms == 4000
    assert [(b.name, b.left, b.width, b.label) for b in timeline.bars] == [
        ("a", 0, 25.0, "1.0 s"),
        ("b", 25.0, 75.0, "3.0 s"),
    ]
    assert timeline.ticks == [(0, "0 ms"), (25, "1.0 s"), (50, "2.0 s"), (75, "3.0 s"), (100, "4.0 s")]
    assert str(timeline.bars[1].style) == "left:25.0%;width:75.0%"


def test_parallel_steps_overlap_and_skipped_and_waiting_steps_say_so() -> None:
    steps = [
        step("left", "completed", 0, 2),
        step("right", "completed", 0, 1),
        step("join", "running", 2),
        step("maybe", "skipped", 2, 2.001),
        step("later", "pending"),
    ]
    timeline = run_timeline(steps, now=T0 + timedelta(seconds=4))
    bars = {b.name: b for b in timeline.bars}
    assert bars["left"].left == bars["right"].left == 0
    assert (bars["left"].width, bars["right"].width) == (50.0, 25.0)
    assert (bars["join"].left, bars["join"].width, bars["join"].label) == (50.0, 50.0, "2.0 s so far")
    assert (bars["maybe"].label, bars["maybe"].width) == ("skipped", 0.6)  # a marker, not an invisible sliver
    assert (bars["later"].started, bars["later"].label) == (False, "not started")


def test_a_run_with_no_started_step_has_no_axis() -> None:
    timeline = run_timeline([step("a", "pending"), step("b", "cancelled")], now=T0)
    assert (timeline.span_ms, timeline.ticks) == (0, [])
    assert [(b.started, b.label) for b in timeline.bars] == [(False, "not started"), (False, "cancelled")]


def test_short_runs_read_in_milliseconds() -> None:
    timeline = run_timeline([step("a", "failed", 0, 0.031)], now=T0)
    assert (timeline.bars[0].label, timeline.ticks[-1]) == ("31 ms", (100, "31 ms"))


def test_a_retried_step_keeps_every_attempt_on_the_axis() -> None:
    # Attempt 1 ran 0-1 s and failed; the step waits for its retry at 3 s: its bar is
    # the failed attempt, which stays put (the step's started_at is that attempt's).
    waiting = [step("a", "pending", 0, earlier=[(0, 1, "Attempt 1 failed (503)")], retry=3), step("b", "pending")]
    timeline = run_timeline(waiting, now=T0 + timedelta(seconds=2))
    a = timeline.bars[0]
    assert (timeline.span_ms, a.started, a.label) == (1000, False, "retry at 20:00:03")
    assert [(e.left, e.width, e.label) for e in a.earlier] == [(0, 100.0, "attempt 1: 1.0 s · Attempt 1 failed (503)")]

    # Attempt 2 runs from 3 s: both attempts on one track, the first where it was.
    running = [step("a", "running", 3, earlier=[(0, 1, "Attempt 1 failed (503)")]), step("b", "pending")]
    timeline = run_timeline(running, now=T0 + timedelta(seconds=4))
    a = timeline.bars[0]
    assert timeline.span_ms == 4000
    assert [(e.left, e.width) for e in a.earlier] == [(0, 25.0)]
    assert (a.left, a.width, a.label) == (75.0, 25.0, "1.0 s so far")


def test_a_retry_whose_time_has_come_says_it_is_retrying() -> None:
    waiting = step("a", "pending", 0, earlier=[(0, 1, "")], retry=1)
    assert run_timeline([waiting], now=T0 + timedelta(seconds=2)).bars[0].label == "retrying"
