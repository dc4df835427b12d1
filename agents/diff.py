"""Readable differences between two snapshots, for reviewers who should not read JSON.

Pure functions: `snapshot_diff` says what changed per identity field, section, skill,
tool and policy key; `word_diff` marks changed words in a text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from agents.snapshot import IDENTITY_FIELDS

TOKEN = re.compile(r"\s+|[^\s]+")


@dataclass(frozen=True)
class TextChange:
    label: str
    before: str
    after: str

    @property
    def words(self) -> list[tuple[str, str]]:
        return word_diff(self.before, self.after)


@dataclass
class ItemChanges:
    """Changes to a keyed list (sections or skills)."""

    added: list[dict] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    edited: list[tuple[dict, list[TextChange]]] = field(default_factory=list)
    reordered: tuple[list[str], list[str]] | None = None

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.edited or self.reordered)


@dataclass
class SnapshotDiff:
    identity: list[TextChange] = field(default_factory=list)
    system_prompt: TextChange | None = None
    onboarding: TextChange | None = None
    sections: ItemChanges = field(default_factory=ItemChanges)
    skills: ItemChanges = field(default_factory=ItemChanges)
    tools_added: list[str] = field(default_factory=list)
    tools_removed: list[str] = field(default_factory=list)
    policy: list[tuple[str, object, object]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.identity
            or self.system_prompt
            or self.onboarding
            or self.sections
            or self.skills
            or self.tools_added
            or self.tools_removed
            or self.policy
        )

    @property
    def change_count(self) -> int:
        return (
            len(self.identity)
            + bool(self.system_prompt)
            + bool(self.onboarding)
            + _item_count(self.sections)
            + _item_count(self.skills)
            + len(self.tools_added)
            + len(self.tools_removed)
            + len(self.policy)
        )


def _item_count(items: ItemChanges) -> int:
    return len(items.added) + len(items.removed) + len(items.edited) + bool(items.reordered)


def snapshot_diff(before: dict, after: dict) -> SnapshotDiff:
    diff = SnapshotDiff()
    for name in IDENTITY_FIELDS:
        old, new = before["identity"][name], after["identity"][name]
        if old != new:
            as_text = (lambda v: "\n".join(v)) if name == "goals" else str
            diff.identity.append(TextChange(name, as_text(old), as_text(new)))
    if before["system_prompt"] != after["system_prompt"]:
        diff.system_prompt = TextChange("system prompt", before["system_prompt"] or "", after["system_prompt"] or "")
    if before["onboarding"] != after["onboarding"]:
        diff.onboarding = TextChange("onboarding", before["onboarding"], after["onboarding"])
    diff.sections = _items(before["sections"], after["sections"], ("title", "body", "enabled"))
    diff.skills = _items(before["skills"], after["skills"], ("title", "body", "shared"))
    diff.tools_added = [t for t in after["allowed_tool_names"] if t not in before["allowed_tool_names"]]
    diff.tools_removed = [t for t in before["allowed_tool_names"] if t not in after["allowed_tool_names"]]
    diff.policy = dict_changes(before["runtime_policy"], after["runtime_policy"])
    return diff


def _items(before: list[dict], after: list[dict], fields: tuple[str, ...]) -> ItemChanges:
    old = {item["key"]: item for item in before}
    new = {item["key"]: item for item in after}
    changes = ItemChanges(
        added=[item for item in after if item["key"] not in old],
        removed=[item for item in before if item["key"] not in new],
    )
    for item in after:
        previous = old.get(item["key"])
        if previous is None:
            continue
        edits = [TextChange(f, str(previous[f]), str(item[f])) for f in fields if previous[f] != item[f]]
        if edits:
            changes.edited.append((item, edits))
    kept_old = [k for k in old if k in new]
    kept_new = [k for k in new if k in old]
    if kept_old != kept_new:
        changes.reordered = (kept_old, kept_new)
    return changes


def dict_changes(before: dict, after: dict, prefix: str = "") -> list[tuple[str, object, object]]:
    """Changed leaves as (dotted path, before, after)."""
    changes = []
    for key in sorted(set(before) | set(after)):
        path = f"{prefix}{key}"
        old, new = before.get(key), after.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changes.extend(dict_changes(old, new, f"{path}."))
        elif old != new:
            changes.append((path, old, new))
    return changes


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """`[(op, text), ...]` with op "equal", "delete" or "insert", word by word."""
    old, new = TOKEN.findall(before), TOKEN.findall(after)
    pieces: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pieces.append(("equal", "".join(old[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(("delete", "".join(old[i1:i2])))
        if j2 > j1:
            pieces.append(("insert", "".join(new[j1:j2])))
    return pieces


def diff_stats(before: dict | None, after: dict) -> dict:
    """What a queue row shows of a proposal's size: changes and characters."""
    if before is None:
        return {"changes": 0, "added_chars": 0, "removed_chars": 0}
    diff = snapshot_diff(before, after)
    added = removed = 0
    for change in _text_changes(diff):
        for op, text in change.words:
            if op == "insert":
                added += len(text)
            elif op == "delete":
                removed += len(text)
    for item in diff.sections.added + diff.skills.added:
        added += len(item["body"])
    for item in diff.sections.removed + diff.skills.removed:
        removed += len(item["body"])
    return {"changes": diff.change_count, "added_chars": added, "removed_chars": removed}


def _text_changes(diff: SnapshotDiff) -> list[TextChange]:
    changes = list(diff.identity)
    changes += [c for c in (diff.system_prompt, diff.onboarding) if c]
    for _, edits in diff.sections.edited + diff.skills.edited:
        changes += edits
    return changes
