"""From a person's claims to the roles single sign-on gives them (pure functions).

A value of the roles claim (default `groups`) grants a role in two ways:

- it is named `aihummer:<workspace>:<role>` (e.g. `aihummer:acme:reviewer`);
- it is a key of `AIHUMMER_OIDC_GROUP_ROLES`, a mapping from the provider's group
  names (or ids, as Entra ID sends them) to one or more `<workspace>:<role>`.

Several values for one workspace grant the highest of their roles. Anything else is
ignored: a person's groups at a company provider are mostly not about AiHummer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aihummer.actors import ROLE_ORDER
from aihummer.env import parse_workspace_role

GROUP_PREFIX = "aihummer:"


def claim_value(claims: Mapping[str, Any], path: str) -> Any:
    """`claims[path]`, where a dotted path reaches into objects (Keycloak's
    `realm_access.roles`); a claim literally named with dots wins. None when absent."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def claim_strings(value: Any) -> list[str]:
    """A claim as a list of strings: a list keeps its strings, a string is one value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def roles_from_groups(groups: Iterable[str], group_roles: Mapping[str, list[tuple[str, str]]]) -> dict[str, str]:
    """`{workspace slug: role}` granted by `groups`, the highest role per workspace."""
    granted: dict[str, str] = {}
    for group in groups:
        targets = list(group_roles.get(group, []))
        if group.startswith(GROUP_PREFIX):
            named = parse_workspace_role(group.removeprefix(GROUP_PREFIX))
            if named is not None:
                targets.append(named)
        for workspace, role in targets:
            current = granted.get(workspace)
            if current is None or ROLE_ORDER.index(role) > ROLE_ORDER.index(current):
                granted[workspace] = role
    return granted
