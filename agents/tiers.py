"""Risk tiers of a change to what an agent is told, computed from the structured diff
(never declared by the proposer). Pure functions of two snapshots.

- `wording`: section, onboarding and skill text; removing tools; a policy limit lowered
  or a setting that grants nothing (pruning, session, memory notes);
- `identity`: the identity fields, and the system prompt that overrides them all;
- `power`: a tool added, a limit raised (iterations, children, budgets), children
  allowed to be any or more agents (`interaction.spawn_agent_ids`), any other
  interaction right changed, another preset (another model, provider or credential
  answers); a new agent's first version (it is given everything at once).

The strictest tier a change touches applies; each diff line that put a tier there is
kept as its reason, so the review page can say why.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from agents.diff import snapshot_diff

WORDING, IDENTITY, POWER = "wording", "identity", "power"
TIERS = (WORDING, IDENTITY, POWER)  # mildest first

# Policy values whose rise widens what a turn may do or spend. `None` means "the
# model's own maximum" where the field allows it (the widest value), but where it is
# the global setting (`NULL_IS_GLOBAL`).
RAISING_WIDENS = frozenset(
    {
        "max_iterations",
        "children.max_depth",
        "children.max_concurrent",
        "children.max_per_parent",
        "children.timeout_seconds",
        "context.max_tokens",
        "app.direct_completion.max_tokens",
        "app.direct_completion.timeout_ms",
    }
)


@dataclass(frozen=True)
class Reason:
    tier: str
    line: str

    def as_json(self) -> dict:
        return {"tier": self.tier, "line": self.line}


def strictest(tiers: list[str]) -> str:
    return max(tiers, key=TIERS.index, default=WORDING)


def change_tier(before: dict | None, after: dict) -> tuple[str, list[Reason]]:
    """The tier of the change `before` → `after` and every reason, strictest first."""
    if before is None:
        return POWER, [Reason(POWER, "a new agent: everything it is told, its tools and limits included")]
    diff = snapshot_diff(before, after)
    reasons = [Reason(POWER, f"tool added: {name}") for name in diff.tools_added]
    if diff.preset:
        old, new = (key or "the workspace's default" for key in diff.preset)
        reasons.append(Reason(POWER, f"preset changed: {old} → {new} (another model answers)"))
    reasons += [_policy_reason(path, old, new) for path, old, new in diff.policy]
    reasons += [Reason(IDENTITY, f"identity {change.label} changed") for change in diff.identity]
    if diff.system_prompt:
        reasons.append(Reason(IDENTITY, "system prompt override changed"))
    reasons += [Reason(WORDING, f"tool removed: {name}") for name in diff.tools_removed]
    if diff.onboarding:
        reasons.append(Reason(WORDING, "onboarding text changed"))
    for noun, items in (("section", diff.sections), ("skill", diff.skills)):
        reasons += [Reason(WORDING, f"{noun} added: {item['key']}") for item in items.added]
        reasons += [Reason(WORDING, f"{noun} removed: {item['key']}") for item in items.removed]
        for item, edits in items.edited:
            fields = ", ".join(edit.label for edit in edits)
            reasons.append(Reason(WORDING, f"{noun} {item['key']}: {fields} changed"))
        if items.reordered:
            reasons.append(Reason(WORDING, f"{noun}s reordered"))
    reasons.sort(key=lambda reason: -TIERS.index(reason.tier))
    return strictest([reason.tier for reason in reasons]), reasons


def _policy_reason(path: str, old: object, new: object) -> Reason:
    shown = f"runtime_policy.{path}: {_shown(old)} → {_shown(new)}"
    if path == "interaction.spawn_agent_ids":
        return Reason(POWER if _widens_agents(old, new) else WORDING, shown)
    if path.startswith("interaction."):
        return Reason(POWER, f"{shown} (interaction rights)")
    if path in RAISING_WIDENS:
        old, new = _global_for_null(path, old), _global_for_null(path, new)
        return Reason(POWER, f"{shown} (raised)") if _raised(old, new) else Reason(WORDING, f"{shown} (lowered)")
    return Reason(WORDING, shown)


# Where null is the global setting (`agents.runtime.tree`), compared at its value now.
NULL_IS_GLOBAL = {
    "children.max_depth": "AIHUMMER_SUBAGENT_MAX_DEPTH",
    "children.timeout_seconds": "AIHUMMER_SUBAGENT_TIMEOUT_SEC",
}


def _global_for_null(path: str, value: object) -> object:
    if value is None and path in NULL_IS_GLOBAL:
        return getattr(settings, NULL_IS_GLOBAL[path])
    return value


def _raised(old: object, new: object) -> bool:
    if new is None:
        return old is not None
    return old is not None and isinstance(new, int | float) and isinstance(old, int | float) and new > old


def _widens_agents(old: object, new: object) -> bool:
    """null means any agent of the workspace, the widest of all; [] none."""
    if new is None:
        return old is not None
    return old is not None and bool(set(new) - set(old))


def _shown(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def widening_reasons(before: dict, after: dict) -> list[Reason]:
    """The reasons that put `before` → `after` in the power tier (empty: it widens
    nothing). What an agent's self-edit is checked with."""
    return [reason for reason in change_tier(before, after)[1] if reason.tier == POWER]
