"""Pictures of workflows for the admin, drawn on the server with no external asset:
the step graph of a definition (SVG) and the timeline of a run's steps.

Pure functions over plain data: the graph reads a compiled `Plan` (and, on a run
page, each step's status); the timeline reads step rows' times. Every piece of text
that comes from a definition or a run goes through `format_html`, so a step named
`<script>` draws as text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from agents.templatetags.desk_format import duration_ms
from workflows.engine import Plan
from workflows.models import StepStatus

NODE_WIDTH, NODE_HEIGHT = 176, 50
GAP_X, GAP_Y, PAD = 56, 22, 12
DASH = "5 4"  # a conditional step's outline and the arrows into it
STATUS_COLOURS = {
    "pending": "#a0aec0",
    "running": "#3182ce",
    "completed": "#2f855a",
    "failed": "#c53030",
    "cancelled": "#718096",
    "skipped": "#b7791f",
}


def _join(parts: Iterable[SafeString]) -> SafeString:
    return format_html_join("", "{}", ((part,) for part in parts))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the step graph -------------------------------------------------------------------
def graph_layout(plan: Plan) -> dict[str, tuple[int, int]]:
    """Each step's (column, row): the column is the length of the longest chain of
    dependencies leading to it, so steps that may run at the same time share a column
    and parallel branches sit one above the other."""
    column: dict[str, int] = {}
    for name in plan.order():
        column[name] = 1 + max((column[dep] for dep in plan.by_name[name].depends_on), default=-1)
    rows: dict[int, int] = {}
    placed = {}
    for step in plan.steps:  # definition order within a column
        col = column[step.name]
        placed[step.name] = (col, rows.get(col, 0))
        rows[col] = rows.get(col, 0) + 1
    return placed


def graph_svg(
    plan: Plan, statuses: Mapping[str, str] | None = None, agent_urls: Mapping[str, str] | None = None
) -> SafeString:
    """The plan's steps as boxes (name, agent, `when` condition) with an arrow from each
    dependency; a conditional step has a dashed outline and dashed arrows in. With
    `statuses`, each box is coloured by its step's status; with `agent_urls` (by agent
    key), each box links to its agent's page."""
    layout = graph_layout(plan)
    columns = 1 + max(col for col, _ in layout.values())
    rows = 1 + max(row for _, row in layout.values())
    width = PAD * 2 + columns * NODE_WIDTH + (columns - 1) * GAP_X
    height = PAD * 2 + rows * NODE_HEIGHT + (rows - 1) * GAP_Y

    def origin(name: str) -> tuple[int, int]:
        col, row = layout[name]
        return PAD + col * (NODE_WIDTH + GAP_X), PAD + row * (NODE_HEIGHT + GAP_Y)

    edges = []
    for step in plan.steps:
        x2, y2 = origin(step.name)
        for dep in step.depends_on:
            x1, y1 = origin(dep)
            x1, y1, y2m = x1 + NODE_WIDTH, y1 + NODE_HEIGHT // 2, y2 + NODE_HEIGHT // 2
            bend = (x2 - x1) // 2
            edges.append(
                format_html(
                    '<path class="aih-edge" data-from="{}" data-to="{}" d="M{} {} C{} {} {} {} {} {}" fill="none" '
                    'stroke="#718096" stroke-width="1.5"{} marker-end="url(#aih-arrow)"/>',
                    dep,
                    step.name,
                    x1,
                    y1,
                    x1 + bend,
                    y1,
                    x2 - bend,
                    y2m,
                    x2 - 2,
                    y2m,
                    format_html(' stroke-dasharray="{}"', DASH) if step.when is not None else "",
                )
            )
    nodes = [
        _linked(
            _node(step, *origin(step.name), (statuses or {}).get(step.name)), (agent_urls or {}).get(step.agent_name)
        )
        for step in plan.steps
    ]
    return format_html(
        '<svg class="aih-graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-label="{label}"><defs><marker id="aih-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#718096"/>'
        "</marker></defs>{edges}{nodes}</svg>",
        w=width,
        h=height,
        label=gettext("Step graph: %(count)d steps") % {"count": len(plan.steps)},
        edges=_join(edges),
        nodes=_join(nodes),
    )


def _linked(node: SafeString, url: str | None) -> SafeString:
    return format_html('<a href="{}" class="aih-node-link">{}</a>', url, node) if url else node


def _node(step: object, x: int, y: int, status: str | None) -> SafeString:
    colour = STATUS_COLOURS.get(status or "", "#4a5568")
    fill = colour if status else "#fff"
    text = "#fff" if status else "#1a202c"
    detail = gettext("when %(condition)s") % {"condition": step.when.text} if step.when is not None else step.agent_name
    title = f"{step.name} · " + gettext("agent %(agent)s") % {"agent": step.agent_name}
    if step.when is not None:
        title += " · " + gettext("runs when %(condition)s is true") % {"condition": step.when.text}
    if status:
        title += f" · {status_label(status)}"
    return format_html(
        '<g class="aih-node{cond}" data-step="{name}"{status_attr}><title>{title}</title>'
        '<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" stroke="{colour}" '
        'stroke-width="1.5"{dash}/>'
        '<text x="{tx}" y="{ty1}" font-size="13" font-weight="600" fill="{text}">{label}</text>'
        '<text x="{tx}" y="{ty2}" font-size="11" fill="{text}"{italic}>{detail}</text></g>',
        cond=" aih-conditional" if step.when is not None else "",
        name=step.name,
        status_attr=format_html(' data-status="{}"', status) if status else "",
        title=title,
        x=x,
        y=y,
        w=NODE_WIDTH,
        h=NODE_HEIGHT,
        fill=fill,
        colour=colour,
        dash=format_html(' stroke-dasharray="{}"', DASH) if step.when is not None else "",
        tx=x + 10,
        ty1=y + 20,
        ty2=y + 38,
        text=text,
        label=_short(step.name, 22),
        italic=format_html(' font-style="{}"', "italic") if step.when is not None else "",
        detail=_short(detail, 27),
    )


# --- the run timeline -----------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """A bar on a step's track: the current attempt, or an earlier one."""

    left: float  # percent of the axis
    width: float  # percent of the axis
    label: str

    @property
    def style(self) -> SafeString:
        # Formatted here: a template would localise the decimal point.
        return format_html("left:{}%;width:{}%", self.left, self.width)


@dataclass(frozen=True)
class TimelineBar:
    name: str
    status: str
    left: float  # percent of the axis
    width: float  # percent of the axis; 0 for a step that has no current attempt
    started: bool  # whether the current attempt is drawn
    label: str  # its duration, or why it has none
    earlier: tuple[Segment, ...] = ()  # the attempts before, as they ended

    @property
    def style(self) -> SafeString:
        return format_html("left:{}%;width:{}%", self.left, self.width)

    @property
    def colour(self) -> str:
        return STATUS_COLOURS.get(self.status, "#718096")

    @property
    def status_label(self) -> str:
        return status_label(self.status)


@dataclass(frozen=True)
class Timeline:
    bars: list[TimelineBar]
    span_ms: int
    ticks: list[tuple[float, str]]  # (percent, label)


MIN_WIDTH = 0.6  # percent: a step of a few milliseconds still shows as a bar


def _earlier(step: object) -> list[tuple[int, datetime, datetime, str]]:
    """The step's logged attempts with a start: (number, start, end, error)."""
    return [
        (
            entry["attempt"],
            datetime.fromisoformat(entry["started_at"]),
            datetime.fromisoformat(entry["ended_at"]),
            entry.get("error", ""),
        )
        for entry in step.attempt_log
        if entry.get("started_at")
    ]


def _current(step: object, now: datetime) -> tuple[datetime, datetime] | None:
    """The current attempt's span; none for a step given back for a retry (its start
    is the attempt its log already holds) or never started."""
    if step.started_at is None or (step.status == "pending" and step.finished_at is None):
        return None
    return step.started_at, step.finished_at or now


def run_timeline(steps: Iterable[object], *, now: datetime) -> Timeline:
    """Each step's attempts on one time axis that starts with the first attempt of
    any step: earlier attempts as they ended, the current one to its end (or `now`
    while it runs), so steps that ran at the same time overlap and a retried step
    keeps the time its failed attempts took."""
    steps = list(steps)
    spans = {step.name: (_earlier(step), _current(step, now)) for step in steps}
    starts = [
        start for earlier, current in spans.values() for start in [*(e[1] for e in earlier), *(current or ())[:1]]
    ]
    if not starts:
        return Timeline(bars=[_waiting(step, now) for step in steps], span_ms=0, ticks=[])
    origin = min(starts)
    ends = [end for earlier, current in spans.values() for end in [*(e[2] for e in earlier), *(current or ())[1:]]]
    span_ms = max(int((max(ends) - origin).total_seconds() * 1000), 1)

    def segment(start: datetime, end: datetime, label: str) -> Segment:
        length_ms = max((end - start).total_seconds() * 1000, 0)
        width = max(length_ms / span_ms * 100, MIN_WIDTH)
        left = (start - origin).total_seconds() * 1000 / span_ms * 100
        return Segment(round(min(left, 100 - width), 3), round(width, 3), label)

    bars = []
    for step in steps:
        earlier_spans, current = spans[step.name]
        earlier = tuple(
            segment(
                start,
                end,
                gettext("attempt %(number)s: %(duration)s") % {"number": number, "duration": duration_ms(end - start)}
                + (f" · {error}" if error else ""),
            )
            for number, start, end, error in earlier_spans
        )
        if current is None:
            bars.append(replace(_waiting(step, now), earlier=earlier))
            continue
        start, end = current
        label = status_label("skipped") if step.status == "skipped" else duration_ms(end - start)
        if step.finished_at is None:
            label = gettext("%(duration)s so far") % {"duration": label}
        drawn = segment(start, end, label)
        bars.append(TimelineBar(step.name, step.status, drawn.left, drawn.width, True, label, earlier))
    ticks = [(percent, duration_ms(span_ms * percent / 100)) for percent in (0, 25, 50, 75, 100)]
    return Timeline(bars=bars, span_ms=span_ms, ticks=ticks)


def _waiting(step: object, now: datetime) -> TimelineBar:
    if step.status == "pending" and step.attempts:
        retry_at = step.retry_at
        label = (
            gettext("retry at %(at)s") % {"at": f"{retry_at:%H:%M:%S}"}
            if retry_at and retry_at > now
            else gettext("retrying")
        )
    else:
        label = gettext("not started") if step.status == "pending" else status_label(step.status)
    return TimelineBar(step.name, step.status, 0, 0, False, label)


def status_label(status: str) -> str:
    """A step's status in the reader's language, lower case as the pages print it."""
    return StepStatus(status).label.lower() if status in StepStatus.values else status
