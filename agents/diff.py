"""Readable differences between two snapshots, for reviewers who should not read JSON.

Pure functions: `snapshot_diff` says what changed per identity field, section, skill,
tool, policy key and the preset; `word_diff` marks changed words in a text.

A word diff of two long texts is quadratic (2 000 words: 1 s; 10 000: 19 s), so texts
are compared line by line first, and words only inside the lines that changed, trimmed
of what they share at both ends. A changed passage still too long to compare word by
word (`MAX_WORD_PAIRS`) is shown whole, removed then added, and the diff says so
(`Pieces.coarse`), as does the review page.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cached_property

from agents.snapshot import IDENTITY_FIELDS

# A word with the spaces after it: a lone " " token would match everywhere and make the
# comparison far slower (1 000 words: 255 ms instead of 150 ms on a 15-word vocabulary).
TOKEN = re.compile(r"\s+|\S+\s*")
# Word pairs one changed passage may cost to compare (words before times words after), about
# 20 ms in the worst case measured (a 15-word vocabulary); natural text is faster.
MAX_WORD_PAIRS = 250_000


class Pieces(list):
    """`[(op, text), ...]` with op "equal", "delete" or "insert". `coarse`: some changed
    passages were too long to compare word by word and are shown whole."""

    coarse: bool = False


@dataclass(frozen=True)
class TextChange:
    label: str
    before: str
    after: str

    @cached_property
    def words(self) -> Pieces:
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
    # The preset's key before and after (None: the workspace's default), when it changed.
    preset: tuple[str | None, str | None] | None = None

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
            or self.preset
        )

    @property
    def coarse(self) -> bool:
        """Some changed passage is shown whole rather than word by word."""
        return any(change.words.coarse for change in _text_changes(self))

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
            + bool(self.preset)
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
    if before["preset"] != after["preset"]:
        diff.preset = (before["preset"], after["preset"])
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


def word_diff(before: str, after: str) -> Pieces:
    """`[(op, text), ...]` with op "equal", "delete" or "insert": lines compared first,
    then the words of each changed passage (see the module's docstring)."""
    pieces = Pieces()
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _add(pieces, "equal", "".join(old[i1:i2]))
        else:
            _changed_passage(pieces, "".join(old[i1:i2]), "".join(new[j1:j2]))
    return pieces


def _changed_passage(pieces: Pieces, before: str, after: str) -> None:
    old, new = TOKEN.findall(before), TOKEN.findall(after)
    # What both ends share is equal, however long the passage: a one-word edit in a
    # 20 000-character line costs nothing.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    _add(pieces, "equal", "".join(old[:head]))
    middle_old, middle_new = old[head : len(old) - tail], new[head : len(new) - tail]
    if len(middle_old) * len(middle_new) > MAX_WORD_PAIRS:
        pieces.coarse = True
        _add(pieces, "delete", "".join(middle_old))
        _add(pieces, "insert", "".join(middle_new))
    else:
        matcher = difflib.SequenceMatcher(a=middle_old, b=middle_new, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                _add(pieces, "equal", "".join(middle_old[i1:i2]))
                continue
            removed, added = "".join(middle_old[i1:i2]), "".join(middle_new[j1:j2])
            # "trois " → "deux ": the space after both words did not change.
            space = removed[len(removed.rstrip()) :]
            if op == "replace" and space and added.endswith(space) and added.strip() and removed.strip():
                removed, added = removed[: -len(space)], added[: -len(space)]
            else:
                space = ""
            _add(pieces, "delete", removed)
            _add(pieces, "insert", added)
            _add(pieces, "equal", space)
    _add(pieces, "equal", "".join(old[len(old) - tail :]) if tail else "")


def _add(pieces: Pieces, op: str, text: str) -> None:
    """Append, merging with the previous piece of the same kind."""
    if not text:
        return
    if pieces and pieces[-1][0] == op:
        pieces[-1] = (op, pieces[-1][1] + text)
    else:
        pieces.append((op, text))


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
