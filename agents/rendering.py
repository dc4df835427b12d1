"""From a snapshot to a system prompt: a pure function, no database, no clock.

The fixed words around the agent's own text ("You are", "Goals", "# Skills"…) are in
the agent's `identity.language` (French or English; English for any other), so a French
agent's prompt has no English scaffolding.

The prompt is two layers. The *prefix* depends only on the snapshot (and on whether
this is the first turn), so the same snapshot always renders byte-identical prefixes
that providers can cache; its SHA-256 is recorded with every model call. The
*volatile* part (the day, the caller's context, memory) comes last.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date

TRUNCATION_MARK = "\n[… profile truncated to {limit} characters by runtime_policy.context.bootstrap_max_chars]"


@dataclass(frozen=True)
class Scaffolding:
    """The words the renderer adds, in one language."""

    you_are: str
    role: str
    language: str
    goals: str
    persona: str
    skills: str
    first_conversation: str
    today: str
    context: str
    memory: str


ENGLISH = Scaffolding(
    you_are="You are {}.",
    role="Role: {}",
    language="Answer in this language: {}",
    goals="Goals:",
    persona="## Persona",
    skills="# Skills",
    first_conversation="## First conversation",
    today="Today is {}.",
    context="## Context",
    memory="## Memory",
)
FRENCH = Scaffolding(
    you_are="Tu es {}.",
    role="Rôle : {}",
    language="Langue de réponse : {}",
    goals="Objectifs :",
    persona="## Personnalité",
    skills="# Compétences",
    first_conversation="## Première conversation",
    today="Nous sommes le {}.",
    context="## Contexte",
    memory="## Mémoire",
)
# By the primary subtag of a BCP 47 tag (`fr-CA` → `fr`), or the language's own name.
SCAFFOLDINGS = {"en": ENGLISH, "english": ENGLISH, "fr": FRENCH, "french": FRENCH, "français": FRENCH}


def scaffolding_for(language: str | None) -> Scaffolding:
    """The scaffolding of `language` (an agent's `identity.language`); English by default."""
    primary = (language or "").strip().lower().replace("_", "-").split("-")[0]
    return SCAFFOLDINGS.get(primary, ENGLISH)


@dataclass(frozen=True)
class RenderedPrompt:
    prefix: str
    volatile: str

    @property
    def text(self) -> str:
        return f"{self.prefix}\n\n{self.volatile}" if self.volatile else self.prefix

    @property
    def prefix_hash(self) -> str:
        return hashlib.sha256(self.prefix.encode()).hexdigest()


def render_system_prompt(
    snapshot: dict,
    *,
    first_turn: bool = False,
    today: date | None = None,
    context: dict | None = None,
    memory: str = "",
) -> RenderedPrompt:
    """The system prompt of `snapshot`, prefix first. `today` is passed in (day
    granularity) rather than read here, so rendering stays pure."""
    words = scaffolding_for((snapshot.get("identity") or {}).get("language"))
    return RenderedPrompt(
        prefix=render_prefix(snapshot, first_turn=first_turn),
        volatile=render_volatile(today=today, context=context, memory=memory, words=words),
    )


def render_prefix(snapshot: dict, *, first_turn: bool = False) -> str:
    """A plain `system_prompt` replaces identity, sections and onboarding but keeps
    the Skills block; otherwise identity, persona, enabled sections in order, Skills,
    and onboarding on a first turn only."""
    identity = snapshot.get("identity") or {}
    words = scaffolding_for(identity.get("language"))
    skills = _skills_block(snapshot.get("skills") or [], words)
    if snapshot.get("system_prompt"):
        blocks = [snapshot["system_prompt"].strip(), skills]
    else:
        blocks = [
            _identity_block(identity, words),
            *_section_blocks(snapshot.get("sections") or []),
            skills,
            _onboarding_block(snapshot.get("onboarding") or "", words) if first_turn else "",
        ]
    profile = "\n\n".join(block for block in blocks if block)
    limit = ((snapshot.get("runtime_policy") or {}).get("context") or {}).get("bootstrap_max_chars")
    if limit and len(profile) > limit:
        profile = profile[:limit].rstrip() + TRUNCATION_MARK.format(limit=limit)
    return profile


def render_volatile(
    *, today: date | None = None, context: dict | None = None, memory: str = "", words: Scaffolding = ENGLISH
) -> str:
    lines = []
    if today is not None:
        lines.append(words.today.format(today.isoformat()))
    if context:
        lines.append(words.context)
        lines.extend(f"- {key}: {value}" for key, value in sorted(context.items()))
    if memory:
        lines.extend([words.memory, memory.strip()])
    return "\n".join(lines)


def _identity_block(identity: dict, words: Scaffolding) -> str:
    lines = []
    if identity.get("name"):
        lines.append(words.you_are.format(identity["name"]))
    if identity.get("role"):
        lines.append(words.role.format(identity["role"]))
    if identity.get("language"):
        lines.append(words.language.format(identity["language"]))
    goals = identity.get("goals") or []
    if goals:
        lines.append(words.goals)
        lines.extend(f"- {goal}" for goal in goals)
    if identity.get("persona"):
        lines.extend(["", words.persona, identity["persona"].strip()])
    return "\n".join(lines).strip()


def _section_blocks(sections: list[dict]) -> list[str]:
    ordered = sorted((s for s in sections if s.get("enabled", True)), key=lambda s: s.get("position", 0))
    return [f"## {s.get('title') or s['key']}\n{s.get('body', '').strip()}".strip() for s in ordered]


def _skills_block(skills: list[dict], words: Scaffolding) -> str:
    if not skills:
        return ""
    parts = [words.skills]
    parts.extend(f"## {skill.get('title') or skill['key']}\n{skill.get('body', '').strip()}" for skill in skills)
    return "\n\n".join(parts)


def _onboarding_block(onboarding: str, words: Scaffolding) -> str:
    return f"{words.first_conversation}\n{onboarding.strip()}" if onboarding.strip() else ""
