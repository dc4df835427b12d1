"""An execution tree's limits: how deep a turn's children may run, for how long, how
many at once, and which tools they are never offered (`runtime_policy.children` and
`.interaction`).

An agent's `children.max_depth` and `timeout_seconds` replace the globals
(`AIHUMMER_SUBAGENT_MAX_DEPTH`, `AIHUMMER_SUBAGENT_TIMEOUT_SEC`) for that agent, lower
or higher; null takes them. Depth counts from the tree's root (0), and no agent's limit
goes past the limit of the agent that started it, nor past the document's 4.

`children.max_concurrent` counts the children running at once in the whole tree, in
the database: a child takes a place (`Place.take`, a `TreePlace` row of the root turn,
inserted under a lock on the root's row only while fewer than the cap are unexpired)
before it runs and deletes it when it ends, so the count holds whichever threads or
processes run the tree's turns. A place lapses unless renewed: one thread per process
(`KEEPER`) renews the places that process holds, so a process killed mid-tree frees its
places one lease (AIHUMMER_TREE_PLACE_LEASE_SEC) later. The cap is the strictest
`max_concurrent` on the way down from the root. A child waiting for its own children
lends its place meanwhile (`Place.lent`): it is not at the provider, and a tree whose
every place is held by waiting parents would wait on itself until its deadline.

A turn's children run in threads of its process; `branch_of` rebuilds from the database
what a turn's ancestors handed down, so another process can run a child of it in the
same tree, within the same limits (`agents.runtime.loop.agent_turn_run_child`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise

from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import Now

from agents.models import AgentTurn, TreePlace
from agents.policy_models import TREE_MAX_CONCURRENT, ChildrenPolicy, InteractionPolicy, RuntimePolicy

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.02  # how often a child waiting for a place asks again

TREE_MAX_DEPTH = 4  # the document's bound on children.max_depth: the root's `above`


def depth_limit(children: ChildrenPolicy, *, above: int) -> int:
    """The deepest a descendant of a turn may run: its own `max_depth` (the global when
    null), never past `above`, its parent's limit."""
    own = settings.AIHUMMER_SUBAGENT_MAX_DEPTH if children.max_depth is None else children.max_depth
    return min(own, above)


def child_timeout(children: ChildrenPolicy) -> int:
    """Seconds a child of a turn may run (its deadline is also never past its parent's)."""
    return settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC if children.timeout_seconds is None else children.timeout_seconds


def child_denied(interaction: InteractionPolicy, *, inherited: frozenset[str], leaf: bool) -> frozenset[str]:
    """The tools a child is never offered: what its ancestors took away, its parent's
    `child_tool_deny`, and `child_leaf_tool_deny` when it may not delegate further."""
    denied = inherited | set(interaction.child_tool_deny)
    return frozenset(denied | set(interaction.child_leaf_tool_deny) if leaf else denied)


def depth_refusal(*, depth: int, limit: int) -> str:
    """What a model reads when a child would run deeper than its turn's limit."""
    return (
        f"Delegation refused: depth {limit} is this agent's limit, and a child would run at depth {depth + 1} "
        "(runtime_policy.children.max_depth; AIHUMMER_SUBAGENT_MAX_DEPTH where it is null)."
    )


def concurrency_refusal(cap: int) -> str:
    """What a model reads when no place in its tree freed before the child's deadline."""
    return (
        f"Delegation refused: {cap} children of this execution tree were running until this child's time ran out "
        f"(runtime_policy.children.max_concurrent = {cap}); try again later or with fewer children at once."
    )


class Place:
    """A child's place among the running children of its tree: a `TreePlace` row of the
    root turn, renewed by this process's `KEEPER` while the child runs."""

    def __init__(self, root_id: int, cap: int) -> None:
        self.root_id, self.cap, self.pk = root_id, cap, None

    @property
    def held(self) -> bool:
        return self.pk is not None

    def take(self, deadline: float) -> bool:
        """Take a place as soon as fewer than `cap` unexpired places are taken, asking
        every POLL_SECONDS; False when none freed before `deadline` (time.monotonic())."""
        while not self._take_now():
            if time.monotonic() + POLL_SECONDS >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        KEEPER.keep(self.pk)
        return True

    def _take_now(self) -> bool:
        live = TreePlace.objects.filter(root_id=self.root_id, lease_until__gt=Now())
        if live.count() >= self.cap:  # a waiting child's one query a poll: no lock
            return False
        with transaction.atomic():
            # The tree's takers in turn, on the root's row. NO KEY: a child turn's insert,
            # which points at the root (FOR KEY SHARE), is not held up.
            root = AgentTurn.all_objects.select_for_update(no_key=True).filter(pk=self.root_id).order_by()
            if not root.values("pk"):  # not this connection's to see (or gone): no place in it
                return False
            TreePlace.objects.filter(root_id=self.root_id, lease_until__lte=Now()).delete()  # lapsed
            if live.count() >= self.cap:
                return False
            lease = timedelta(seconds=settings.AIHUMMER_TREE_PLACE_LEASE_SEC)
            self.pk = TreePlace.objects.create(root_id=self.root_id, process=_process(), lease_until=Now() + lease).pk
        return True

    def give_back(self) -> None:
        if self.pk is not None:
            KEEPER.forget(self.pk)
            TreePlace.objects.filter(pk=self.pk).delete()
            self.pk = None

    @contextmanager
    def lent(self, deadline: float) -> Iterator[None]:
        """The place given back while the block runs (a turn waiting for its children),
        taken again after it; if none frees before `deadline`, the turn goes on without
        one: it is out of time, and its next model call will not be made."""
        was_held = self.held
        self.give_back()
        try:
            yield
        finally:
            if was_held:
                self.take(deadline)


def _process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:100]


class PlaceKeeper:
    """One thread per process renewing, in one UPDATE every third of a lease, the lease
    of every place the process holds: a live child's place never lapses, a dead
    process's do."""

    def __init__(self) -> None:
        self._held: set[int] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._interval = float("inf")  # what the thread waits for now

    def keep(self, pk: int) -> None:
        with self._lock:
            self._held.add(pk)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._renew_forever, name="tree-place-keeper", daemon=True)
                self._thread.start()
            if self._interval > settings.AIHUMMER_TREE_PLACE_LEASE_SEC / 3:
                self._wake.set()  # a shorter lease than the one the thread waits on

    def forget(self, pk: int) -> None:
        with self._lock:
            self._held.discard(pk)

    def held(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._held)

    def _after_fork(self) -> None:
        """A forked child holds none of its parent's places, nor its thread."""
        self._held, self._lock, self._wake = set(), threading.Lock(), threading.Event()
        self._thread, self._interval = None, float("inf")

    def _renew_forever(self) -> None:
        while True:
            lease = settings.AIHUMMER_TREE_PLACE_LEASE_SEC
            self._interval = lease / 3
            self._wake.wait(self._interval)
            self._wake.clear()
            held = self.held()
            if not held:
                continue
            try:
                TreePlace.objects.filter(pk__in=held).update(lease_until=Now() + timedelta(seconds=lease))
            except Exception:  # the next beat tries again; a lapsed place only lets one more child in
                logger.exception("Renewing %d execution tree place(s) failed", len(held))
            finally:
                connection.close()  # not held between beats


KEEPER = PlaceKeeper()
os.register_at_fork(after_in_child=KEEPER._after_fork)


@dataclass(frozen=True)
class Branch:
    """Where a turn sits in its execution tree: what its ancestors handed down."""

    root_id: int | None = None  # None: the turn is the root
    cap: int = TREE_MAX_CONCURRENT  # the strictest children.max_concurrent above it
    denied: frozenset[str] = frozenset()  # tools an ancestor took from it (`child_denied`)
    place: Place | None = None  # its place among the running children (a root holds none)


ROOT = Branch()


def tree_cap(branch: Branch, children: ChildrenPolicy) -> int:
    """The most children of the tree running at once when this turn starts one."""
    return min(branch.cap, children.max_concurrent)


def branch_of(root_id: int, chain: list[tuple[int, RuntimePolicy]]) -> tuple[Branch, int]:
    """Where the last turn of `chain` (the turns from the tree's root `root_id` down to
    it, each turn's depth and policy) sits in its tree, and the depth limit its parent handed it (`above`): what
    the `delegate` calls down that chain handed each turn, rebuilt for another process."""
    branch, above = ROOT, TREE_MAX_DEPTH
    for (_, policy), (depth, _) in pairwise(chain):
        limit = depth_limit(policy.children, above=above)
        denied = child_denied(policy.interaction, inherited=branch.denied, leaf=depth >= limit)
        branch, above = Branch(root_id=root_id, cap=tree_cap(branch, policy.children), denied=denied), limit
    return branch, above
