"""An execution tree's limits: how deep a turn's children may run, for how long, how
many at once, and which tools they are never offered (`runtime_policy.children` and
`.interaction`).

An agent's `children.max_depth` and `timeout_seconds` replace the globals
(`AIHUMMER_SUBAGENT_MAX_DEPTH`, `AIHUMMER_SUBAGENT_TIMEOUT_SEC`) for that agent, lower
or higher; null takes them. Depth counts from the tree's root (0), and no agent's limit
goes past the limit of the agent that started it, nor past the document's 4.

`children.max_concurrent` counts the children running at once in the whole tree, in
the database: the root turn's `tree_running`, which a child raises with one conditional
UPDATE before it runs (`Place.take`) and lowers when it ends, so the count holds
whichever threads or processes run the tree's turns. The cap is the strictest
`max_concurrent` on the way down from the root. A child waiting for its own children
lends its place meanwhile (`Place.lent`): it is not at the provider, and a tree whose
every place is held by waiting parents would wait on itself until its deadline.
Known limit: a process killed while its children hold places leaves the count raised
on a root whose turn died with it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F

from agents.models import AgentTurn
from agents.policy import TREE_MAX_CONCURRENT, ChildrenPolicy, InteractionPolicy

POLL_SECONDS = 0.02  # how often a child waiting for a place asks again

TREE_MAX_DEPTH = 4  # the document's bound on children.max_depth: the root's `above`


def depth_limit(children: ChildrenPolicy, *, above: int) -> int:
    """The deepest a descendant of a turn may run: its own `max_depth` (the global when
    null), never past `above`, its parent's limit."""
    own = settings.AIHUMMER_SUBAGENT_MAX_DEPTH if children.max_depth is None else children.max_depth
    return min(own, above)


def child_timeout(children: ChildrenPolicy) -> int:
    """Seconds a child of a turn may run (its deadline is also never past its parent's)."""
    return settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC if children.timeout_seconds is None else children.timeout_seconds


def child_denied(interaction: InteractionPolicy, *, inherited: frozenset[str], leaf: bool) -> frozenset[str]:
    """The tools a child is never offered: what its ancestors took away, its parent's
    `child_tool_deny`, and `child_leaf_tool_deny` when it may not delegate further."""
    denied = inherited | set(interaction.child_tool_deny)
    return frozenset(denied | set(interaction.child_leaf_tool_deny) if leaf else denied)


def depth_refusal(*, depth: int, limit: int) -> str:
    """What a model reads when a child would run deeper than its turn's limit."""
    return (
        f"Delegation refused: depth {limit} is this agent's limit, and a child would run at depth {depth + 1} "
        "(runtime_policy.children.max_depth; AIHUMMER_SUBAGENT_MAX_DEPTH where it is null)."
    )


def concurrency_refusal(cap: int) -> str:
    """What a model reads when no place in its tree freed before the child's deadline."""
    return (
        f"Delegation refused: {cap} children of this execution tree were running until this child's time ran out "
        f"(runtime_policy.children.max_concurrent = {cap}); try again later or with fewer children at once."
    )


class Place:
    """A child's place among the running children of its tree, counted on the root turn's row."""

    def __init__(self, root_id: int, cap: int) -> None:
        self.root_id, self.cap, self.held = root_id, cap, False

    def take(self, deadline: float) -> bool:
        """Take a place as soon as fewer than `cap` are taken, asking every POLL_SECONDS;
        False when none freed before `deadline` (time.monotonic())."""
        rows = AgentTurn.all_objects.filter(pk=self.root_id)
        while not rows.filter(tree_running__lt=self.cap).update(tree_running=F("tree_running") + 1):
            if time.monotonic() + POLL_SECONDS >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        self.held = True
        return True

    def give_back(self) -> None:
        if self.held:
            AgentTurn.all_objects.filter(pk=self.root_id).update(tree_running=F("tree_running") - 1)
            self.held = False

    @contextmanager
    def lent(self, deadline: float) -> Iterator[None]:
        """The place given back while the block runs (a turn waiting for its children),
        taken again after it; if none frees before `deadline`, the turn goes on without
        one: it is out of time, and its next model call will not be made."""
        was_held = self.held
        self.give_back()
        try:
            yield
        finally:
            if was_held:
                self.take(deadline)


@dataclass(frozen=True)
class Branch:
    """Where a turn sits in its execution tree: what its ancestors handed down."""

    root_id: int | None = None  # None: the turn is the root
    cap: int = TREE_MAX_CONCURRENT  # the strictest children.max_concurrent above it
    denied: frozenset[str] = frozenset()  # tools an ancestor took from it (`child_denied`)
    place: Place | None = None  # its place among the running children (a root holds none)


ROOT = Branch()


def tree_cap(branch: Branch, children: ChildrenPolicy) -> int:
    """The most children of the tree running at once when this turn starts one."""
    return min(branch.cap, children.max_concurrent)
