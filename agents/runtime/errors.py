"""How a turn ends in a clear, expected failure."""

from agents.models import AgentTurn


class TurnFailed(Exception):
    """Ends a turn with this message as its error (a clear, expected failure) and its
    kind (`AgentTurn.ErrorKind`): what a caller decides on, a retry for one."""

    def __init__(self, message: str, *, kind: str = AgentTurn.ErrorKind.REFUSED) -> None:
        super().__init__(message)
        self.kind = kind
