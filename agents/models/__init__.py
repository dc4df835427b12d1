"""The agents app's models, one module per concept; every name is importable from here.

- `credentials`: secrets encrypted in the vault.
- `presets`: a provider, a model and its parameters.
- `profiles`: agents, their G3 sections and skills, shared skills.
- `versions`: the immutable prompt versions and their review status.
- `turns`: turns, the debug log of their model calls, the places of running children.
- `conversations`: conversations, their messages and compaction notes.
- `evidence`: saved test cases, their runs on proposals, each case's result.
- `approval_policy`: the workspace's tiers of review and each approver's decision.
- `approvals`: actions that wait for a person (tool settings, approval requests).

Modules import each other in that order only; a model further down is named by string.
"""

from agents.models.approval_policy import TIER_FIELDS, ApprovalPolicy, TierRule, VersionDecision
from agents.models.approvals import (
    DEFAULT_APPROVAL_TOOLS,
    AgentToolSettings,
    ApprovalRequest,
    WorkspaceToolPolicy,
    default_approval_tools,
)
from agents.models.conversations import Conversation, ConversationMessage, ConversationNote
from agents.models.credentials import Credential
from agents.models.evidence import AgentTestCase, CaseResult, EvidenceRun
from agents.models.presets import Preset
from agents.models.profiles import Agent, AgentSection, AgentSkill, Skill
from agents.models.turns import DEFAULT_ARCHIVE_AFTER_MINUTES, AgentTurn, DebugLog, TreePlace
from agents.models.versions import PromptVersion

__all__ = [
    "DEFAULT_APPROVAL_TOOLS",
    "DEFAULT_ARCHIVE_AFTER_MINUTES",
    "TIER_FIELDS",
    "Agent",
    "AgentSection",
    "AgentSkill",
    "AgentTestCase",
    "AgentToolSettings",
    "AgentTurn",
    "ApprovalPolicy",
    "ApprovalRequest",
    "CaseResult",
    "Conversation",
    "ConversationMessage",
    "ConversationNote",
    "Credential",
    "DebugLog",
    "EvidenceRun",
    "Preset",
    "PromptVersion",
    "Skill",
    "TierRule",
    "TreePlace",
    "VersionDecision",
    "WorkspaceToolPolicy",
    "default_approval_tools",
]
