"""How a turn ends in a clear, expected failure."""


class TurnFailed(Exception):
    """Ends a turn with this message as its error (a clear, expected failure)."""
