"""The REST resources of agents, one module each, every view beside its serializers:

- `agents`: the agents themselves, their runtime policy, clones and test turns;
- `profile`: what an agent is told, part by part (profile, sections, skills);
- `versions`: an agent's versions and the approval queue, and what a proposal answers;
- `presets`: presets and the model catalog;
- `skills`: shared skills; `credentials`: the vault; `turns`: turns and debug logs;
- `base`: the fields, patterns and base view they share.

Serializers translate, services decide: every write is validate → service → serialize.
A change to what an agent is told answers 202 with the pending version (200 when it
was applied directly) and a `Location` to follow it.
"""
