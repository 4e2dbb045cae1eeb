"""Composition root: the gateway's services, built on first use, and its start and stop.

What every gateway needs (config, auth, event bus, method table, lanes) is made here; every
other service is built the first time a part reads it, by its builder in
:mod:`homarus.gateway.services.build`. A service whose subsystem is off or idle is never built,
so it never costs an import: that is the lazy-loading rule (ARCHITECTURE.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.config.values import resolve_bind_host
from homarus.errors import HomarusError
from homarus.gateway.context import GatewayContext, GatewayOptions
from homarus.gateway.events import EventBus
from homarus.gateway.methods import register_core_methods
from homarus.gateway.router import MethodRegistry
from homarus.gateway.services.auth import GatewayAuth
from homarus.gateway.services.build import SERVICES, LazyServices
from homarus.gateway.services.health import HealthCache
from homarus.gateway.services.loop_health import LoopHealth
from homarus.gateway.services.warm import preload, runs_ready, settle_heap
from homarus.gateway.ws.hub import WSHub
from homarus.gateway.ws.presence import Presence
from homarus.memory import has_memory_files
from homarus.plugins.presence import installed_plugins_present
from homarus.protocol.limits import CloseCode
from homarus.queue.dedupe import DedupeCache
from homarus.queue.lanes import LaneQueue
from homarus.security.ratelimit import SlidingWindowBudget
from homarus.tasks import cancel_and_wait
from homarus.usecases.recovery import Recovery, recover_runs, resubmit

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig
    from homarus.config.store import ConfigStore
    from homarus.gateway.services.cluster_approvals import ClusterApprovals
    from homarus.security.approvals import ApprovalManager
    from homarus.storage.cluster import Cluster

__all__ = ["Gateway", "GatewayOptions"]

log = logging.getLogger("homarus.gateway")
SANDBOX_PRUNE_INTERVAL_S = 300.0


class Gateway(LazyServices, GatewayContext):
    """Owns every long-lived service; methods and HTTP routes reach them as a GatewayContext.

    Cheap parts are made here; every other service is built on its first read (LazyServices).
    """

    def __init__(self, paths: StatePaths, store: ConfigStore, options: GatewayOptions | None = None) -> None:
        self.paths = paths
        self.config_store = store
        self.options = options or GatewayOptions()
        self.started_at = time.time()
        self.boot_id = str(uuid.uuid4())
        #: the gateways sharing this one's PostgreSQL database (``storage.backend: postgres``)
        self.cluster: Cluster | None = None
        self.cluster_approvals: ClusterApprovals | None = None
        self.shutting_down = False
        #: startup finished (a config change may now start services it did not need before)
        self._serving = False
        self.auth = GatewayAuth(lambda: self.config, paths, self.options.token)
        self.config_budget = SlidingWindowBudget(*self.options.config_write_budget)
        memory = self.config.gateway.memory
        self.bus = EventBus(max_watched=memory.watched_sessions_per_connection)
        self.methods = MethodRegistry()
        register_core_methods(self.methods)
        self.presence = Presence()
        self.connections: dict[str, Any] = {}
        self.session_subscribers: set[str] = set()
        defaults = self.config.agents.defaults
        self.lanes = LaneQueue(
            {"main": defaults.max_concurrent, "subagent": defaults.subagents.max_concurrent, "cron": 1, "nested": 1}
        )
        self.dedupe = DedupeCache(max_entries=memory.runs_kept)
        self.ws = WSHub(self)
        #: what the start found of the runs the last process left unfinished (``status`` shows it)
        self.recovery = Recovery()
        self._health = HealthCache(self, self.options.health_cache_s)
        #: event-loop delay and CPU (``eventLoop`` in ``health`` and ``status``)
        self.loop_health = LoopHealth()
        #: runs accepted and not finished (``gateway.maxPendingRuns`` bounds clients' new ones)
        self.open_runs = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        #: importing and building what the first run needs, right after the socket is bound
        self.warm_up: asyncio.Task[None] | None = None
        if installed_plugins_present(
            self.config.plugins, state_dir=paths.state_dir, workspace=self.workspace_dir(self.config.agents.default_id)
        ):
            _ = self.plugins  # installed plugins load now: their hooks, methods and routes exist from the start

    # -- config ---------------------------------------------------------------------------------
    @property
    def config(self) -> HomarusConfig:
        return self.config_store.current.config

    @property
    def host(self) -> str:
        return self.options.host or resolve_bind_host(self.config.gateway.bind)

    def workspace_dir(self, agent_id: str) -> Path:
        return self.config.agents.workspace_for(agent_id, self.paths.state_dir)

    def on_config_replaced(self) -> None:
        """Apply a config written through config.set/patch: new secret closes old sessions."""
        secret_changed = self.auth.refresh()
        self._health.invalidate()
        if self.built("models"):
            self.__dict__["models"] = SERVICES["models"](self)
            if self.built("runtime"):
                self.runtime.models = self.models
        if self.built("tool_access"):
            self.tool_access.invalidate()
        if self.built("channels") and self.channels.started:
            _ = self.spawn(self.channels.manager.reconcile())
        elif self._serving and not self.built("channels") and self.config.present("channels"):
            _ = self.channels  # built now, so a second change before it started does not start it twice
            _ = self.spawn(self._start_channels())
        if self.built("mcp"):
            _ = self.spawn(self.mcp.reconcile(self.config.mcp))
        elif self._serving and self.config.present("mcp"):
            _ = self.spawn(self.mcp.start_eager())
        if secret_changed:
            for conn in list(self.connections.values()):
                conn.close(CloseCode.AUTH_CHANGED, "gateway auth changed")

    def _cluster_approvals(self, cluster: Cluster) -> ClusterApprovals:
        """Approvals answered from any member (``services/cluster_approvals.py``)."""
        from homarus.gateway.services.cluster_approvals import CHANNEL, ClusterApprovals

        def manager(kind: str) -> ApprovalManager:
            return self.exec_approvals if kind == "exec" else self.plugin_approvals

        approvals = ClusterApprovals(manager, lambda notice: cluster.notices.publish(CHANNEL, notice))
        cluster.notices.subscribe(CHANNEL, approvals.heard)
        return approvals

    async def _want_roles(self, cluster: Cluster) -> None:
        """A cluster's singletons run on the gateway holding their role (``storage/roles.py``):
        the agents' heartbeats and, when configured, the chat channels; taken now when free."""
        from homarus.storage.database import StorageUnavailable

        async def heartbeats_stop() -> None:
            await self.heartbeats.stop()
            if self.built("cron"):
                await self.cron.scheduler.pause()

        async def channels_on() -> None:
            await (self.channels.start() if self.built("channels") else self._start_channels())

        async def channels_off() -> None:
            if self.built("channels") and self.channels.started:
                await self.channels.pause()

        async def heartbeats_on() -> None:
            # cron's timer goes with the heartbeats: a job's system event is queued for the
            # heartbeat of the gateway that ran the job
            self.heartbeats.start()
            if self.built("cron"):
                await self.cron.scheduler.resume()

        cluster.roles.want("heartbeats", heartbeats_on, heartbeats_stop)
        if self.config.present("channels"):
            cluster.roles.want("channels", channels_on, channels_off)
        with contextlib.suppress(StorageUnavailable):  # the heartbeat takes them once the database is back
            await cluster.roles.tick()

    async def _start_channels(self) -> None:
        await self.channels.start()
        # a chat owner is a way to reach an operator (the approvals' builder adds it when built later)
        if self.built("exec_approvals") and self.channels not in self.exec_approvals.routes:
            self.exec_approvals.routes.append(self.channels)

    # -- behaviour the parts share -------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; the gateway keeps a reference and reaps it."""
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def runs_ready(self) -> None:
        await runs_ready()

    def health_summary(self, *, probe: bool = False) -> dict[str, Any]:
        return {**self._health.summary(probe=probe), "eventLoop": self.loop_health.snapshot()}

    def uptime_ms(self) -> int:
        return int((time.time() - self.started_at) * 1000)

    def state_version(self) -> dict[str, int]:
        return self.presence.state_version()

    # -- lifecycle ----------------------------------------------------------------------------------
    async def open_storage(self) -> None:
        """With ``storage.backend: postgres``: connect, migrate the schema and join the cluster,
        before the port is bound, so a database that cannot be had stops the start with its reason
        (``StorageUnavailable``, ``SchemaTooNew``)."""
        if self.cluster is not None or not self.config.present("storage"):
            return  # the embedded default: nothing to import or open
        storage = self.config.storage
        if storage.backend != "postgres":
            return
        from homarus import __version__
        from homarus.storage.cluster import Cluster

        pg = storage.postgres
        assert pg.url is not None  # the config requires it with this backend
        cluster = self.cluster = await Cluster.join(
            pg.url.get_secret_value(),
            version=__version__,
            ttl_s=pg.member_ttl_seconds,
            pool_min=pg.pool_min,
            pool_max=pg.pool_max,
            timeout_s=pg.connect_timeout_seconds,
            statement_timeout_ms=pg.statement_timeout_ms,
        )
        self.lanes.gate = cluster.leases  # a session's runs execute on one gateway at a time
        from homarus.usecases.run_events import RUN_ENDS, link_run_ends

        link_run_ends(
            self.run_events,
            lambda notice: self.spawn(cluster.notices.publish(RUN_ENDS, notice)),
            lambda handler: cluster.notices.subscribe(RUN_ENDS, handler),
        )
        approvals = self.cluster_approvals = self._cluster_approvals(cluster)

        def relayed(event: dict[str, Any]) -> None:  # a client here sees the runs of every member
            if event.get("kind") == "subscribers":  # sessions.changed: to this gateway's subscribers
                self.bus.send_to(list(self.session_subscribers), str(event.get("event")), event.get("payload"))
                return
            approvals.seen(event)
            self.bus.relayed(event)

        from homarus.cron.pg_store import NOTICE_CHANNEL as CRON_NOTICES

        def cron_changed(notice: dict[str, Any]) -> None:  # another member changed jobs: read them
            if self.built("cron"):
                ids = notice.get("ids")
                _ = self.spawn(self._cron_changed(ids if isinstance(ids, list) else None))

        cluster.notices.subscribe(CRON_NOTICES, cron_changed)
        from homarus.channels.pg_db import NOTICE_CHANNEL as CHANNEL_NOTICES

        def pieces_queued(_notice: dict[str, Any]) -> None:  # a reply written elsewhere: send it
            if self.built("channels"):
                self.channels.manager.delivery.poke()

        cluster.notices.subscribe(CHANNEL_NOTICES, pieces_queued)
        from homarus.gateway.methods.devices import close_device_sockets
        from homarus.security.devices import NOTICE_CHANNEL as DEVICE_NOTICES

        def device_changed(notice: dict[str, Any]) -> None:  # removed or re-keyed on another member
            device_id = notice.get("close")
            if isinstance(device_id, str) and device_id:
                close_device_sockets(self, device_id, str(notice.get("reason") or "device changed"))

        cluster.notices.subscribe(DEVICE_NOTICES, device_changed)
        cluster.relay.receive(relayed)
        self.bus.relay = lambda event, droppable: cluster.relay.send(event, droppable=droppable)
        cluster.start_messaging()

    async def _cron_changed(self, ids: list[str] | None) -> None:
        from homarus.cron.pg_store import PgCronStore

        store = self.cron.store
        if isinstance(store, PgCronStore):
            with contextlib.suppress(HomarusError):  # the scheduler's next tick reads them all
                await store.refresh([str(i) for i in ids] if ids is not None else None)
                self.cron.scheduler.poke()

    async def startup(self) -> None:
        self.loop_health.start()
        _ = self.journal
        self.recovery = await asyncio.to_thread(recover_runs, self)
        self._tasks.append(asyncio.create_task(self._tick_loop()))
        if self.cluster is None:
            self.heartbeats.start()
        if self.cluster is not None:  # the jobs every member shares; the timer runs with the role
            from homarus.usecases.cron import start_shared_cron

            self.__dict__["cron"] = await start_shared_cron(self, self.cluster, self.recovery)
        elif self.config.cron.store_path(self.paths.state_dir).exists():
            from homarus.usecases.cron import start_cron

            self.__dict__["cron"] = await start_cron(self, self.recovery)
        elif self.recovery.cron:
            await asyncio.to_thread(self.recovery.interrupt, self, self.recovery.cron)
        if has_memory_files(self.workspace_dir(self.config.agents.default_id)):
            self.memory.index_at_startup()
        if self.config.present("mcp"):
            _ = self.spawn(self.mcp.start_eager())  # eager servers come up beside the gateway, not before it
        if self.cluster is not None:
            await self._want_roles(self.cluster)
        elif self.config.present("channels"):
            await self._start_channels()
        self._log_security_findings()
        await resubmit(self, self.recovery)
        if self.cluster is not None:
            from homarus.queue.pg_journal import PgRunJournal
            from homarus.usecases.takeover import take_over

            assert isinstance(self.journal, PgRunJournal)
            self._tasks.append(asyncio.create_task(take_over(self, self.journal.orphans, self.cluster.ttl_s / 3)))
        settle_heap()  # what start-up made lives as long as the gateway
        self._serving = True
        if self.built("extensions"):
            await self.plugins.start_services()
        if (self.paths.state_dir / "hooks").is_dir() or self.built("hookmd"):
            context = {"stateDir": str(self.paths.state_dir)}
            event = {"type": "gateway", "action": "startup", "messages": [], "context": context}
            await self.hookmd.trigger("gateway", "startup", event)

    def _log_security_findings(self) -> None:
        """What ``homarus security audit`` calls high, in the log at every start (config reads and
        a few ``stat`` calls: nothing is built for it)."""
        from homarus.security.config_audit import audit_config

        try:
            findings = audit_config(self.config, self.paths.state_dir, self.paths.config_path)
        except Exception:  # an audit never stops a start
            log.exception("the security audit at start failed")
            return
        for f in findings:
            if f.severity == "high":
                log.warning("security: %s (%s); fix: %s — see homarus security audit", f.title, f.detail, f.fix)

    def on_listening(self, port: int) -> None:
        """The socket is bound: record the port, tell the plugins (``gateway_start``) and load what
        the first client and the first run need (a worker thread: the loop keeps answering)."""
        self.options.port = port
        self.warm_up = self.spawn(self._warm_up())
        if self.cluster is not None:
            _ = self.spawn(self.cluster.listening(port))
        if self.built("hooks") and self.hooks.has("gateway_start"):
            from homarus.plugins.events import GatewayStartEvent

            _ = self.spawn(self.hooks.void("gateway_start", GatewayStartEvent(port)))

    async def _warm_up(self) -> None:
        """What the first run would otherwise do first: import the agent stack (a worker thread)
        and build the runtime (the plugins found, the tools registered: ~10 ms on the loop)."""
        try:
            await preload(self._preload_modules())
        except Exception:  # a module that cannot be imported: the first run reports it
            log.debug("the warm-up's imports failed", exc_info=True)
            return
        if not self.shutting_down:
            try:
                _ = self.runtime
            except Exception:  # the first run builds it again and reports what is wrong
                log.debug("building the agent runtime ahead of the first run failed", exc_info=True)
            settle_heap()

    def _preload_modules(self) -> list[str]:
        from homarus.providers.adapters import adapter_modules

        return ["homarus.gateway.ws.connection", *adapter_modules(self.config.models)]

    async def _tick_loop(self) -> None:
        last_prune = time.monotonic()
        while True:
            await asyncio.sleep(self.options.tick_interval_s)
            self.bus.broadcast("tick", {"ts": int(time.time() * 1000)})
            if time.monotonic() - last_prune >= SANDBOX_PRUNE_INTERVAL_S and self.built("sandboxes"):
                last_prune = time.monotonic()
                if pruned := await self.sandboxes.prune():
                    log.info("closed %d idle sandbox(es)", pruned)

    async def shutdown(self, reason: str = "gateway stopping", restart_expected_ms: int | None = None) -> None:
        """Stop the services, tell every client we are going, then close their sockets with 1012."""
        if self.shutting_down:
            return
        self.shutting_down = True
        self._serving = False
        if self.built("hooks") and self.hooks.has("gateway_stop"):
            from homarus.plugins.events import GatewayStopEvent

            with contextlib.suppress(TimeoutError):  # the hook's own 5 s timeout bounds each handler
                async with asyncio.timeout(6.0):
                    await self.hooks.void("gateway_stop", GatewayStopEvent(reason))
        if self.built("cron"):
            from homarus.usecases.cron import stop_cron

            await stop_cron(self.cron)
        self.lanes.drain()
        if self.cluster is not None:  # the other gateways take the roles over at once
            await self.cluster.roles.release()
        if self.built("heartbeats"):
            await self.heartbeats.stop()
        for approvals in ("plugin_approvals", "exec_approvals"):
            if self.built(approvals):
                getattr(self, approvals).cancel_all("shutdown")
        if self.built("extensions"):
            await self.plugins.stop_services()
        if self.built("runtime"):
            for run in self.runtime.runs.all():
                self.runtime.abort(run.session_key, origin="shutdown")
        if self._background:
            await asyncio.wait(list(self._background), timeout=2.0)
        if self.built("mcp"):
            await self.mcp.stop()
        if self.built("browser"):
            await self.browser.stop()
        if self.built("channels"):
            await self.channels.stop()
        for task in self._tasks:
            task.cancel()
        await self.loop_health.stop()
        self.bus.broadcast("shutdown", {"reason": reason, "restartExpectedMs": restart_expected_ms})
        await self.ws.close_all(CloseCode.SERVICE_RESTART, "service restart")
        await cancel_and_wait(*self._tasks)  # cancelled above, before the sockets closed
        await self._close_services()

    async def _close_services(self) -> None:
        for name in ("audit_log", "raw_stream_log"):  # before the database goes: a shared trail's last records
            if self.built(name):
                await asyncio.to_thread(getattr(self, name).close)
        if self.cluster is not None:
            await self.cluster.leave()
        if self.built("journal"):
            self.journal.close()
        if self.built("sessions"):
            self.sessions.close()
        if self.built("usage"):
            self.usage.close()
        if self.built("web_client"):
            await self.web_client.aclose()
        if self.built("exec_host"):
            await self.exec_host[1].aclose()
        if self.built("sandboxes"):
            await self.sandboxes.aclose()
        if self.built("memory"):
            await self.memory.aclose()
