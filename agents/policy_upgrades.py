"""Stored runtime policies of earlier formats, rewritten to the current one.

Each step is frozen once shipped: a data migration imports it, and a migration must
write the same rows whenever it runs. So a step holds its own copy of the defaults of
the format it produces instead of reading today's schema; a later change of format adds
a step after it, never edits it.

The first release (before conversations) used names of its own invention; the product
document ("Politique d'exécution") names the fields as they are now. History is never
rewritten: an old version keeps the names it was recorded with, and is upgraded when it
is read (run, restored or cloned), by `agents.policy.upgrade_stored_policy`.

Then (issue 29) `children.allowed_agents`, a name of ours, became the document's
`interaction.spawn_agent_ids`, and the interaction block got the document's fields
(`from_allowed_agents`). Steps run in order: a first-release policy goes through both.
"""

from __future__ import annotations

import copy

# Fields only the first release had: any of them marks a policy of that format.
FIRST_RELEASE_FIELDS = {
    "pruning": {"enabled", "keep_last_tool_results", "max_tool_result_chars"},
    "memory_flush": {"threshold_share", "prompt"},
    "session": {"idle_minutes", "max_turns"},
    "interaction": {"allowed_channels", "allowed_users", "reply_mode"},
    "direct_completion": {"enabled"},
}

# The defaults of the document's format as this step produces it (see the docstring).
DOCUMENT_DEFAULTS = {
    "version": 1,
    "context": {
        "max_tokens": None,
        "reserve_tokens": 4_096,
        "history_share": 0.5,
        "max_history_messages": 200,
        "bootstrap_max_chars": 20_000,
    },
    "pruning": {
        "ttl_seconds": 300,
        "keep_last_assistants": 3,
        "soft_trim_ratio": 0.3,
        "head_chars": 1_500,
        "tail_chars": 1_500,
        "hard_clear_ratio": 0.5,
        "placeholder": "[older tool result trimmed]",
    },
    "memory_flush": {"enabled": True, "soft_threshold_tokens": 4_000},
    "session": {
        "scope": "per-channel-peer",
        "idle_reset_minutes": None,
        "index_prune_after_days": None,
        "index_max_entries": None,
    },
    "children": {
        "max_depth": 1,
        "max_concurrent": 2,
        "max_per_parent": 3,
        "timeout_seconds": 600,
        "archive_after_minutes": 60,
        "allowed_agents": [],
    },
    "max_iterations": 16,
    "app": {
        "reasoning_effort": None,
        "service_tier": None,
        "direct_completion": {"mode": "auto", "max_tokens": 1_024, "timeout_ms": 15_000},
    },
    "interaction": {},
}

# The first release normalised every stored policy, writing its defaults into each: a
# value equal to one of them was never chosen, so it becomes the document's default.
_FIRST_RELEASE_DEFAULTS = {
    ("context", "max_tokens"): 128_000,
    ("pruning", "max_tool_result_chars"): 4_000,
    ("session", "idle_minutes"): 60,
}


def is_first_release(policy: object) -> bool:
    """Whether `policy` is a stored policy in the first release's format."""
    if not isinstance(policy, dict):
        return False
    app = policy.get("app")
    blocks = {**policy, "direct_completion": app.get("direct_completion") if isinstance(app, dict) else None}
    return any(
        isinstance(blocks.get(block), dict) and names & set(blocks[block])
        for block, names in FIRST_RELEASE_FIELDS.items()
    )


def from_first_release(policy: dict) -> dict:
    """The complete policy in the document's format for a first-release `policy`.

    memory_flush.enabled was off by default and enforced nowhere: the document's default
    (on) applies. Kept as they were: context (but the old default budget of 128000 becomes null, the
    model's window), keep_last_tool_results as keep_last_assistants, the placeholder,
    children, max_iterations, app's options and direct completion's bounds. Mapped:
    max_tool_result_chars (the head it kept) becomes head_chars with no tail; disabled
    pruning becomes ratios of 1.0 (trim only a full request); idle_minutes becomes
    idle_reset_minutes. Dropped, as nothing enforced them: memory_flush's
    threshold_share and prompt, session.max_turns, direct_completion.enabled and every
    interaction field (allowed_channels, allowed_users, reply_mode).
    """
    old = copy.deepcopy(policy)
    new = copy.deepcopy(DOCUMENT_DEFAULTS)
    new["context"].update({k: v for k, v in _block(old, "context").items() if k in new["context"]})
    if _chosen(old, "context", "max_tokens") is None:
        new["context"]["max_tokens"] = None
    pruning = _block(old, "pruning")
    if "keep_last_tool_results" in pruning:
        new["pruning"]["keep_last_assistants"] = pruning["keep_last_tool_results"]
    if "placeholder" in pruning:
        new["pruning"]["placeholder"] = pruning["placeholder"]
    kept_head = _chosen(old, "pruning", "max_tool_result_chars")
    if kept_head is not None:
        new["pruning"].update(head_chars=kept_head, tail_chars=0)
    if pruning.get("enabled") is False:
        new["pruning"].update(soft_trim_ratio=1.0, hard_clear_ratio=1.0)
    new["session"]["idle_reset_minutes"] = _chosen(old, "session", "idle_minutes")
    new["children"].update({k: v for k, v in _block(old, "children").items() if k in new["children"]})
    if "max_iterations" in old:
        new["max_iterations"] = old["max_iterations"]
    app = _block(old, "app")
    new["app"].update({k: app[k] for k in ("reasoning_effort", "service_tier") if k in app})
    direct = app.get("direct_completion") if isinstance(app.get("direct_completion"), dict) else {}
    new["app"]["direct_completion"].update({k: direct[k] for k in ("max_tokens", "timeout_ms") if k in direct})
    return new


# The interaction block as `from_allowed_agents` produces it (see the docstring).
INTERACTION_DEFAULTS = {
    "user_ids": None,
    "spawn_agent_ids": None,
    "session_agent_ids": [],
    "session_visibility": "self",
    "session_send": False,
    "child_tool_deny": [],
    "child_leaf_tool_deny": [],
    "elevated_telegram_user_ids": [],
}


def names_allowed_agents(policy: object) -> bool:
    """Whether `policy` is a stored policy with `children.allowed_agents` (issue 28's format)."""
    return isinstance(policy, dict) and "allowed_agents" in _block(policy, "children")


def from_allowed_agents(policy: dict) -> dict:
    """`policy` with `children.allowed_agents` moved to `interaction.spawn_agent_ids`
    (its empty list meant any agent: null) and the interaction block's defaults filled
    in. Its explicit `max_depth` and `timeout_seconds` stay numbers: they now replace
    the globals, so an agent keeps the limits it had under their defaults (2 and 600 s)."""
    new = copy.deepcopy(policy)
    allowed = new["children"].pop("allowed_agents")
    new["interaction"] = {
        **copy.deepcopy(INTERACTION_DEFAULTS),
        **_block(new, "interaction"),
        "spawn_agent_ids": list(allowed) if isinstance(allowed, list) and allowed else None,
    }
    return new


def _block(policy: dict, name: str) -> dict:
    block = policy.get(name)
    return block if isinstance(block, dict) else {}


def _chosen(policy: dict, block: str, name: str) -> object:
    """The value stored at `block.name`, or None when absent or the old default."""
    value = _block(policy, block).get(name)
    return None if value == _FIRST_RELEASE_DEFAULTS[(block, name)] else value
