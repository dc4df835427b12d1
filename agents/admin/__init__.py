"""The agents admin: the model admins (model_admins.py), the review desk (review.py),
the agent's desk pages (desk.py) and their forms (forms.py). Importing this package
registers them all on the admin site."""

from agents.admin import actions_desk, approval_policy, model_admins, review, tool_settings  # noqa: F401 (registers the admins)
