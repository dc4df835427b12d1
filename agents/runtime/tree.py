"""An execution tree's limits: how deep a turn's children may run, for how long, and
which tools they are never offered (`runtime_policy.children` and `.interaction`).

An agent's `children.max_depth` and `timeout_seconds` replace the globals
(`AIHUMMER_SUBAGENT_MAX_DEPTH`, `AIHUMMER_SUBAGENT_TIMEOUT_SEC`) for that agent, lower
or higher; null takes them. Depth counts from the tree's root (0), and no agent's limit
goes past the limit of the agent that started it, nor past the document's 4.
"""

from __future__ import annotations

from django.conf import settings

from agents.policy import ChildrenPolicy, InteractionPolicy

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
