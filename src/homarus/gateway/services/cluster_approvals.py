"""Approvals across the gateways of a cluster: a request made by a run on one gateway is shown to
the operators connected to any of them, and answered from any of them.

The requested and resolved events are broadcast to every gateway's clients (``EventBus.broadcast``
with ``cluster``). A decision sent to a gateway that does not have the approval is forwarded on
:data:`CHANNEL`: the gateway that has it pending records it (and broadcasts the resolution, which
comes back through the relay); the forwarding gateway answers once it sees that resolution, or
``NOT_FOUND`` after :data:`FORWARD_WAIT_S` (no gateway had it pending). Without a cluster, a
decision goes straight to the local manager, as it always did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from homarus.errors import HomarusError, NotFound

if TYPE_CHECKING:
    from homarus.security.approvals import ApprovalManager

__all__ = ["CHANNEL", "FORWARD_WAIT_S", "ClusterApprovals", "resolve_approval"]

CHANNEL: Final = "homarus_approvals"
#: how long a forwarded decision waits for the gateway that has the approval to record it
FORWARD_WAIT_S: Final = 5.0
#: forwarded decisions waiting at once, at most (each is a client's request, bounded by the wait)
MAX_WAITING: Final = 256
RESOLVED_EVENTS: Final = frozenset({"exec.approval.resolved", "plugin.approval.resolved"})


class ClusterApprovals:
    def __init__(
        self, managers: Callable[[str], ApprovalManager], publish: Callable[[dict[str, Any]], Awaitable[bool]]
    ) -> None:
        self._managers = managers
        self._publish = publish
        #: (the id or prefix a client sent, what its resolution completes)
        self._waiting: list[tuple[str, asyncio.Future[dict[str, Any]]]] = []

    def heard(self, notice: dict[str, Any]) -> None:
        """A decision another gateway forwarded: recorded here if the approval is pending here."""
        kind, approval_id, decision = notice.get("kind"), notice.get("id"), notice.get("decision")
        if not (isinstance(kind, str) and isinstance(approval_id, str) and isinstance(decision, str)):
            return
        by = notice.get("by")
        try:
            self._managers(kind).resolve(approval_id, decision, resolved_by=by if isinstance(by, str) else None)
        except (HomarusError, KeyError):
            return  # not pending here (or not a kind of ours): the gateway that has it answers

    def seen(self, event: dict[str, Any]) -> None:
        """A relayed event: a resolution completes the forwarded decisions waiting for it."""
        if event.get("kind") != "broadcast" or event.get("event") not in RESOLVED_EVENTS:
            return
        payload = event.get("payload")
        if not isinstance(payload, dict) or not isinstance(resolved_id := payload.get("id"), str):
            return
        for wanted, future in list(self._waiting):
            if resolved_id.startswith(wanted) and not future.done():
                future.set_result(payload)

    async def resolve(self, manager: ApprovalManager, approval_id: str, decision: str, by: str | None) -> None:
        """Record the decision here, or forward it to the gateway that has the approval."""
        try:
            manager.resolve(approval_id, decision, resolved_by=by)
            return
        except NotFound:
            if len(self._waiting) >= MAX_WAITING:
                raise
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        entry = (approval_id, future)
        self._waiting.append(entry)
        try:
            await self._publish({"kind": manager.kind, "id": approval_id, "decision": decision, "by": by})
            async with asyncio.timeout(FORWARD_WAIT_S):
                await future
        except TimeoutError:
            raise NotFound("unknown or expired approval id", details={"reason": "APPROVAL_NOT_FOUND"}) from None
        finally:
            self._waiting.remove(entry)


async def resolve_approval(
    cluster: ClusterApprovals | None, manager: ApprovalManager, approval_id: str, decision: str, by: str | None
) -> None:
    """An operator's decision, on whichever gateway of a cluster (None: no cluster) has the approval."""
    if cluster is None:
        manager.resolve(approval_id, decision, resolved_by=by)
    else:
        await cluster.resolve(manager, approval_id, decision, by)
