"""Business rules of the agents app, one module per entity. Other apps, commands and
tests import them from here: `from agents.services import prompt_version_propose`."""

from agents.services.agents import AGENT_FIELDS, agent_create, agent_delete, agent_dependents, agent_update
from agents.services.credentials import (
    credential_create,
    credential_delete,
    credential_dependents,
    credential_rotate_all,
    credential_update,
)
from agents.services.edits import AgentChange, agent_change
from agents.services.evidence import (
    UnconfirmedRegressions,
    agent_test_case_create,
    agent_test_case_delete,
    agent_test_case_update,
    evidence_regressions,
    evidence_regressions_to_confirm,
    evidence_request,
    evidence_request_for_agent,
)
from agents.services.notifications import prompt_version_notify
from agents.services.presets import (
    PRESET_FIELDS,
    preset_activate,
    preset_api_key,
    preset_change,
    preset_create,
    preset_delete,
    preset_dependents,
    preset_resolve,
    preset_update,
)
from agents.services.proposals import (
    PROPOSAL_MODES,
    IdenticalToLive,
    StaleProposal,
    agent_clone,
    prompt_version_approve,
    prompt_version_propose,
    prompt_version_reject,
    prompt_version_restore,
    prompt_version_reverts,
    prompt_version_withdraw,
)
from agents.services.skills import skill_as_snapshot_entry, skill_create, skill_update
from agents.services.versions import agent_snapshot, version_go_live, version_record

__all__ = [
    "AGENT_FIELDS",
    "PRESET_FIELDS",
    "PROPOSAL_MODES",
    "AgentChange",
    "IdenticalToLive",
    "StaleProposal",
    "UnconfirmedRegressions",
    "agent_change",
    "agent_clone",
    "agent_create",
    "agent_delete",
    "agent_dependents",
    "agent_snapshot",
    "agent_test_case_create",
    "agent_test_case_delete",
    "agent_test_case_update",
    "agent_update",
    "credential_create",
    "credential_delete",
    "credential_dependents",
    "credential_rotate_all",
    "credential_update",
    "evidence_regressions",
    "evidence_regressions_to_confirm",
    "evidence_request",
    "evidence_request_for_agent",
    "preset_activate",
    "preset_api_key",
    "preset_change",
    "preset_create",
    "preset_delete",
    "preset_dependents",
    "preset_resolve",
    "preset_update",
    "prompt_version_approve",
    "prompt_version_notify",
    "prompt_version_propose",
    "prompt_version_reject",
    "prompt_version_restore",
    "prompt_version_reverts",
    "prompt_version_withdraw",
    "skill_as_snapshot_entry",
    "skill_create",
    "skill_update",
    "version_go_live",
    "version_record",
]
