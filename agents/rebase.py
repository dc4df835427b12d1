"""Three-way merge of snapshots, for a stale proposal: what the proposal changed since
its base, applied to the live version, when live changed other parts. Pure functions.

A snapshot's parts: each identity field, the system prompt, the onboarding, each
section and skill (by key) and their order, each tool of the tool list and its order,
each runtime-policy leaf. Parts both sides changed, to different values, conflict: they
are shown three ways (base, live, proposal) and nothing is merged. A tool is added or
removed by one side or both alike, so only the order of the tools can conflict (both
sides reordered the tools they share, into different orders).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from agents.diff import dict_changes
from agents.snapshot import IDENTITY_FIELDS, normalize_snapshot

LISTS = ("sections", "skills")


@dataclass(frozen=True)
class Conflict:
    part: str
    base: str
    live: str
    proposal: str


@dataclass
class Merge:
    conflicts: list[Conflict] = field(default_factory=list)
    snapshot: dict | None = None  # None when there are conflicts

    @property
    def clean(self) -> bool:
        return not self.conflicts


def three_way(base: dict, live: dict, proposal: dict) -> Merge:
    """The proposal's changes since `base` on top of `live`, or the conflicting parts."""
    merged = copy.deepcopy(live)
    conflicts: list[Conflict] = []

    def part(name: str, b: object, lv: object, p: object) -> object:
        """The merged value of one part: the side that changed it, or a conflict."""
        if p in (b, lv):
            return lv
        if lv == b:
            return p
        conflicts.append(Conflict(name, _shown(b), _shown(lv), _shown(p)))
        return lv

    for name in IDENTITY_FIELDS:
        merged["identity"][name] = part(
            f"identity.{name}", base["identity"][name], live["identity"][name], proposal["identity"][name]
        )
    for key in ("system_prompt", "onboarding", "preset"):
        merged[key] = part(key, base[key], live[key], proposal[key])
    as_items = lambda names: [{"key": name} for name in names]  # noqa: E731
    tools = [as_items(snapshot["allowed_tool_names"]) for snapshot in (base, live, proposal)]
    merged["allowed_tool_names"] = [item["key"] for item in _merge_items("tools", *tools, part, conflicts)]
    for key in LISTS:
        merged[key] = _merge_items(key, base[key], live[key], proposal[key], part, conflicts)
    merged["runtime_policy"] = _merge_policy(base, live, proposal, part)
    if conflicts:
        return Merge(conflicts=conflicts)
    return Merge(snapshot=normalize_snapshot(merged))


def _merge_items(noun: str, base: list, live: list, proposal: list, part: object, conflicts: list) -> list:
    keys = lambda items: [item["key"] for item in items]  # noqa: E731
    if proposal == base:
        return live
    if live == base:
        return proposal
    # Both changed the list: item by item, unless either reordered what the three share.
    shared = [k for k in keys(base) if k in keys(live) and k in keys(proposal)]
    order = lambda items: [k for k in keys(items) if k in shared]  # noqa: E731
    live_moved, proposal_moved = order(live) != order(base), order(proposal) != order(base)
    if live_moved and proposal_moved and order(live) != order(proposal):
        shown = [", ".join(keys(items)) for items in (base, live, proposal)]
        conflicts.append(Conflict(f"{noun} order", *shown))
        return live
    by_key = lambda items: {item["key"]: _bare(item) for item in items}  # noqa: E731
    b, lv, p = by_key(base), by_key(live), by_key(proposal)
    result = [dict(item) for item in live]
    for key in dict.fromkeys([*keys(base), *keys(proposal)]):
        chosen = part(f"{noun[:-1]} {key}", b.get(key), lv.get(key), p.get(key))
        current = next((i for i, item in enumerate(result) if item["key"] == key), None)
        if chosen is None and current is not None:
            del result[current]
        elif chosen is not None and current is not None:
            result[current] = dict(chosen)
        elif chosen is not None:
            result.insert(_insert_at(result, keys(proposal), key), dict(chosen))
    if proposal_moved and not live_moved:
        # The shared items take the proposal's order, in the places they hold in live.
        slots = [index for index, item in enumerate(result) if item["key"] in shared]
        merged = {item["key"]: item for item in result}
        for index, key in zip(slots, order(proposal), strict=True):
            result[index] = merged[key]
    return result


def _bare(item: dict) -> dict:
    """An item without its position (renumbered anyway)."""
    return {name: value for name, value in item.items() if name != "position"}


def _insert_at(result: list[dict], proposal_keys: list[str], key: str) -> int:
    """After the item that precedes `key` in the proposal, where live still has it."""
    before = proposal_keys[: proposal_keys.index(key)]
    for previous in reversed(before):
        for index, item in enumerate(result):
            if item["key"] == previous:
                return index + 1
    return 0


def _merge_policy(base: dict, live: dict, proposal: dict, part: object) -> dict:
    merged = copy.deepcopy(live["runtime_policy"])
    for path, _old, new in dict_changes(base["runtime_policy"], proposal["runtime_policy"]):
        value = part(
            f"runtime_policy.{path}", _at(base["runtime_policy"], path), _at(live["runtime_policy"], path), new
        )
        _set(merged, path, value)
    return merged


def _at(policy: dict, path: str) -> object:
    node: object = policy
    for name in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(name)
    return node


def _set(policy: dict, path: str, value: object) -> None:
    *blocks, name = path.split(".")
    node = policy
    for block in blocks:
        node = node.setdefault(block, {})
    node[name] = value


def _shown(value: object) -> str:
    """A part as a reviewer reads it: text as text, a section or skill as its title
    and body, anything else as JSON."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "body" in value:
        marks = (("disabled", value.get("enabled") is False), ("shared", value.get("shared")))
        flags = [name for name, on in marks if on]
        return f"{value.get('title', '')}\n{value['body']}" + (f"\n({', '.join(flags)})" if flags else "")
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
