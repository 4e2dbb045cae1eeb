"""Taking over the runs of a gateway that died (``storage.backend: postgres``, several gateways).

Every member looks, a few times per member ttl, whether a member that is gone (killed, or cut off
from the database past its ttl) left unfinished runs in the shared journal; if so it claims them
(``PgRunJournal.unfinished``: one ``UPDATE``, so two survivors never take the same run) and applies
the same recovery rules as a restart (``usecases/recovery.py``): a queued run runs here, a started
webhook or channel run resumes from its transcript, a started ``agent``/``chat.send`` run ends
interrupted with its notice. A cron run is interrupted: its job (shared, ``cron/pg_store.py``) is
free again once the dead member's ttl has passed and runs again as a catch-up on the gateway
holding the scheduler. The session lease (``storage/leases.py``) keeps a
taken-over run from starting while the dead member's lease is still running out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from homarus.errors import HomarusError
from homarus.usecases.recovery import recover_runs, resubmit

if TYPE_CHECKING:
    from homarus.usecases.recovery import RecoveryHost

__all__ = ["take_over"]

log = logging.getLogger("homarus.gateway")


async def take_over(host: RecoveryHost, orphans: Callable[[], bool], every_s: float) -> None:
    """Run until cancelled: every ``every_s``, take up the runs gone members left."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await take_over_once(host, orphans)
        except HomarusError as exc:  # the database away: the next round tries again
            log.debug("takeover: %s", exc.message)
        except Exception:  # a bug here must not end the rounds
            log.exception("takeover: a round failed")


async def take_over_once(host: RecoveryHost, orphans: Callable[[], bool]) -> int:
    """One round; returns how many runs it took."""
    if not await asyncio.to_thread(orphans):
        return 0
    recovery = await asyncio.to_thread(recover_runs, host)
    if recovery.cron:
        await asyncio.to_thread(recovery.interrupt, host, recovery.cron)
        recovery.cron = []
    taken = len(recovery.to_run) + len(recovery.followers) + len(recovery.interrupted)
    log.warning("took over %d run(s) of a gateway that is gone: %s", taken, recovery.summary())
    await resubmit(host, recovery)
    return taken
