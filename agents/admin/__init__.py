"""The agents admin: model admins, the review desk, their forms. Importing this
package registers them all on the admin site."""

from agents.admin import model_admins, review  # noqa: F401 (registers the admins)
