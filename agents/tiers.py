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

from dataclasses import dataclass, field

from django.conf import settings
from django.utils.translation import gettext_noop

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
    """One diff line that put a tier there. `template` is English with `%(name)s`
    places for the names it quotes (keys, tools, paths), marked for translation: the API
    reads `line`, the desk says the same in its reader's language (`said`)."""

    tier: str
    template: str
    names: dict[str, str] = field(default_factory=dict)

    @property
    def line(self) -> str:
        return self.template % self.names

    def as_json(self) -> dict:
        return {"tier": self.tier, "line": self.line, "template": self.template, "names": self.names}


def strictest(tiers: list[str]) -> str:
    return max(tiers, key=TIERS.index, default=WORDING)


PRESET_CHANGED = {
    (True, True): gettext_noop("preset changed: %(old)s → %(new)s (another model answers)"),
    (False, True): gettext_noop("preset changed: the workspace's default → %(new)s (another model answers)"),
    (True, False): gettext_noop("preset changed: %(old)s → the workspace's default (another model answers)"),
}
ITEM_CHANGES = {
    "section": (
        gettext_noop("section added: %(key)s"),
        gettext_noop("section removed: %(key)s"),
        gettext_noop("section %(key)s: %(fields)s changed"),
        gettext_noop("sections reordered"),
    ),
    "skill": (
        gettext_noop("skill added: %(key)s"),
        gettext_noop("skill removed: %(key)s"),
        gettext_noop("skill %(key)s: %(fields)s changed"),
        gettext_noop("skills reordered"),
    ),
}


def change_tier(before: dict | None, after: dict) -> tuple[str, list[Reason]]:
    """The tier of the change `before` → `after` and every reason, strictest first."""
    if before is None:
        return POWER, [Reason(POWER, gettext_noop("a new agent: everything it is told, its tools and limits included"))]
    diff = snapshot_diff(before, after)
    reasons = [Reason(POWER, gettext_noop("tool added: %(tool)s"), {"tool": name}) for name in diff.tools_added]
    if diff.preset:
        old, new = diff.preset
        names = {name: key for name, key in (("old", old), ("new", new)) if key}
        reasons.append(Reason(POWER, PRESET_CHANGED[bool(old), bool(new)], names))
    reasons += [_policy_reason(path, old, new) for path, old, new in diff.policy]
    reasons += [
        Reason(IDENTITY, gettext_noop("identity %(field)s changed"), {"field": change.label})
        for change in diff.identity
    ]
    if diff.system_prompt:
        reasons.append(Reason(IDENTITY, gettext_noop("system prompt override changed")))
    reasons += [Reason(WORDING, gettext_noop("tool removed: %(tool)s"), {"tool": name}) for name in diff.tools_removed]
    if diff.onboarding:
        reasons.append(Reason(WORDING, gettext_noop("onboarding text changed")))
    for noun, items in (("section", diff.sections), ("skill", diff.skills)):
        added, removed, edited, reordered = ITEM_CHANGES[noun]
        reasons += [Reason(WORDING, added, {"key": item["key"]}) for item in items.added]
        reasons += [Reason(WORDING, removed, {"key": item["key"]}) for item in items.removed]
        for item, edits in items.edited:
            fields = ", ".join(edit.label for edit in edits)
            reasons.append(Reason(WORDING, edited, {"key": item["key"], "fields": fields}))
        if items.reordered:
            reasons.append(Reason(WORDING, reordered))
    reasons.sort(key=lambda reason: -TIERS.index(reason.tier))
    return strictest([reason.tier for reason in reasons]), reasons


def _policy_reason(path: str, old: object, new: object) -> Reason:
    names = {"change": f"runtime_policy.{path}: {_shown(old)} → {_shown(new)}"}
    if path == "interaction.spawn_agent_ids":
        return Reason(POWER if _widens_agents(old, new) else WORDING, "%(change)s", names)
    if path.startswith("interaction."):
        return Reason(POWER, gettext_noop("%(change)s (interaction rights)"), names)
    if path in RAISING_WIDENS:
        old, new = _global_for_null(path, old), _global_for_null(path, new)
        if _raised(old, new):
            return Reason(POWER, gettext_noop("%(change)s (raised)"), names)
        return Reason(WORDING, gettext_noop("%(change)s (lowered)"), names)
    return Reason(WORDING, "%(change)s", names)


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
