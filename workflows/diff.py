"""What changed between two versions of a workflow definition, for people who should
not compare JSON by eye: steps added, removed, edited (field by field) or reordered,
and changes to the rest of the definition. Built on `agents.diff` (the same change
shapes and word diff the review desk shows)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.diff import TextChange, dict_changes


@dataclass
class DefinitionDiff:
    steps_added: list[str] = field(default_factory=list)
    steps_removed: list[str] = field(default_factory=list)
    steps_edited: list[tuple[str, list[TextChange]]] = field(default_factory=list)
    order: tuple[list[str], list[str]] | None = None
    other: list[TextChange] = field(default_factory=list)  # outputs, description, inputs, version

    def __bool__(self) -> bool:
        return bool(self.steps_added or self.steps_removed or self.steps_edited or self.order or self.other)


def _as_json(value: Any) -> str:
    return "—" if value is None else json.dumps(value, ensure_ascii=False, indent=None)


def _steps(definition: Any) -> dict[str, dict]:
    steps = definition.get("steps") if isinstance(definition, dict) else None
    if not isinstance(steps, list):
        return {}
    return {s["name"]: s for s in steps if isinstance(s, dict) and isinstance(s.get("name"), str)}


def definition_diff(before: Any, after: Any) -> DefinitionDiff:
    """The changes from `before` to `after`, steps matched by name."""
    old, new = _steps(before), _steps(after)
    diff = DefinitionDiff(
        steps_added=[name for name in new if name not in old],
        steps_removed=[name for name in old if name not in new],
    )
    for name, step in new.items():
        if name in old and old[name] != step:
            changes = dict_changes(old[name], step)
            diff.steps_edited.append((name, [TextChange(path, _as_json(a), _as_json(b)) for path, a, b in changes]))
    kept_old, kept_new = [n for n in old if n in new], [n for n in new if n in old]
    if kept_old != kept_new:
        diff.order = (kept_old, kept_new)
    rest_before = {k: v for k, v in (before or {}).items() if k != "steps"} if isinstance(before, dict) else {}
    rest_after = {k: v for k, v in (after or {}).items() if k != "steps"} if isinstance(after, dict) else {}
    diff.other = [TextChange(path, _as_json(a), _as_json(b)) for path, a, b in dict_changes(rest_before, rest_after)]
    return diff
