"""Single sign-on with OpenID Connect: admin login through the provider, roles from
its claims, RP-initiated logout, session renewal, and bearer access tokens for the
API. `user_from_bearer_token` is the entry point for any surface that takes tokens.
"""
