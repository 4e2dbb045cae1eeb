"""One WebSocket client: the thin I/O adapter around the sans-I/O handshake and the router."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson

from homarus.config.values import is_loopback_host
from homarus.errors import HomarusError, Unavailable
from homarus.gateway.client import ClientInfo
from homarus.gateway.errors import error_shape
from homarus.gateway.router import MethodCall
from homarus.gateway.ws.hello import hello_payload
from homarus.gateway.ws.outbox import Outbox
from homarus.gateway.ws.uvicorn_ws import MAX_SIZE_EXTENSION
from homarus.protocol.frames import ErrorShape, error_response, ok_response
from homarus.protocol.handshake import Close, ConnectRequest, Rejected, ServerHandshake
from homarus.protocol.inbound import FrameError, decode_request
from homarus.protocol.limits import MAX_PAYLOAD_BYTES, CloseCode
from homarus.security.origin import ORIGIN_NOT_ALLOWED, check_origin

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.gateway.ws.hub import WSHub

__all__ = ["WSConnection"]

log = logging.getLogger("homarus.gateway.ws")

Scope = dict[str, Any]
Receive = Any
Send = Any

# Bounds the tasks one socket can keep in flight; past it requests are refused, not queued.
MAX_IN_FLIGHT = 256
# Consecutive role-denied calls before the socket is dropped (a probing client).
MAX_UNAUTHORIZED_STREAK = 10


class WSConnection:
    def __init__(self, gateway: GatewayContext, hub: WSHub, scope: Scope, receive: Receive, send: Send) -> None:
        self.gateway = gateway
        self.hub = hub
        self.scope = scope
        self._receive = receive
        self._send = send
        self.conn_id = str(uuid.uuid4())
        client = scope.get("client")
        self.ip: str = client[0] if client else "unknown"
        self.outbox = Outbox(gateway.options.max_buffered_bytes)
        self.info: ClientInfo | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._unauthorized_streak = 0

    # -- Recipient protocol (event bus) -------------------------------------------------
    @property
    def role(self) -> str:
        return self.info.role if self.info else ""

    @property
    def scopes(self) -> frozenset[str]:
        return self.info.scopes if self.info else frozenset()

    @property
    def caps(self) -> frozenset[str]:
        return self.info.caps if self.info else frozenset()

    def push(self, text: str, *, droppable: bool = False) -> bool:
        return self.outbox.push(text, droppable=droppable)

    def close(self, code: int, reason: str = "", *, discard: bool = False) -> None:
        self.outbox.close(code, reason, discard=discard)

    # -- lifecycle ----------------------------------------------------------------------
    async def run(self) -> None:
        message = await self._receive()
        if message["type"] != "websocket.connect":
            return
        refusal = self.hub.admission.upgrade_refusal(self.scope, self.ip)
        if refusal is not None:
            await self._deny(*refusal)
            return
        self.hub.admission.enter(self.ip)
        preauth = True
        await self._send({"type": "websocket.accept"})
        writer = asyncio.create_task(self.outbox.run(self._send))
        try:
            opened = await self._handshake()
            self.hub.admission.leave(self.ip)
            preauth = False
            if opened:
                self.hub.attach(self)
                try:
                    await self._serve()
                finally:
                    self.hub.detach(self)
        except _Disconnected:
            pass
        finally:
            if preauth:
                self.hub.admission.leave(self.ip)
            for task in self._tasks:
                task.cancel()
            if not self.outbox.closing:
                self.outbox.close(CloseCode.NORMAL)
            try:
                async with asyncio.timeout(5):
                    await writer
            except (TimeoutError, OSError, RuntimeError):
                writer.cancel()
            except Exception:  # the peer went away mid-write; nothing left to tell it
                log.debug("writer ended with an error", exc_info=True)

    async def _deny(self, status: int, text: str, extra: dict[str, str]) -> None:
        if "websocket.http.response" in self.scope.get("extensions", {}):
            body = text.encode()
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
            headers += [(k.encode(), v.encode()) for k, v in extra.items()]
            await self._send({"type": "websocket.http.response.start", "status": status, "headers": headers})
            await self._send({"type": "websocket.http.response.body", "body": body})
        else:
            await self._send({"type": "websocket.close", "code": CloseCode.POLICY_VIOLATION})

    async def _next_text(self, timeout: float | None = None) -> str | bytes:
        async with asyncio.timeout(timeout):
            message = await self._receive()
        if message["type"] == "websocket.disconnect":
            raise _Disconnected
        text = message.get("text")
        if text is None:
            text = message.get("bytes") or b""
        return text  # type: ignore[no-any-return]

    async def _handshake(self) -> bool:
        hs = ServerHandshake(nonce=str(uuid.uuid4()), now_ms=_now_ms())
        self.push(orjson.dumps(hs.challenge()).decode())
        deadline = time.monotonic() + self.gateway.options.handshake_timeout_s
        try:
            text = await self._next_text(max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            self._close(hs.timeout())
            return False
        outcome = hs.receive(text)
        if isinstance(outcome, Rejected):
            self._reject(outcome)
            return False
        refused = self._origin_refusal()
        if refused is not None:
            self._reject(hs.reject(refused))
            return False
        decision = await self.hub.admission.authenticate(outcome, self.ip, hs.nonce, local=self._local())
        if isinstance(decision, ErrorShape):
            self._reject(hs.reject(decision))
            return False
        self.info = self._client_info(outcome, decision.scopes)
        self.info.device_id = decision.device_id
        ext = self.scope.get("extensions", {}).get(MAX_SIZE_EXTENSION)
        if ext is not None:
            ext["set"](MAX_PAYLOAD_BYTES)
        hello = hello_payload(self.gateway, self.info)
        if decision.device_id is not None:
            device_auth: dict[str, Any] = {"role": self.info.role, "scopes": sorted(decision.scopes)}
            if decision.device_token is not None:
                device_auth["deviceToken"] = decision.device_token
            if decision.token_issued_at is not None:
                device_auth["issuedAtMs"] = decision.token_issued_at
            hello["auth"] = {**hello.get("auth", {}), **device_auth}
        self.push(orjson.dumps(hs.accept(hello).response).decode())
        return True

    def _local(self) -> bool:
        """A direct loopback connection: no proxy in between that could carry someone else."""
        names = {k.decode("latin-1").lower() for k, _ in self.scope.get("headers", [])}
        forwarded = {"forwarded", "x-forwarded-for", "x-real-ip", "x-forwarded-host"} & names
        return is_loopback_host(self.ip) and not forwarded

    def _origin_refusal(self) -> ErrorShape | None:
        """Check h: a browser page may connect only from the gateway's own origin or an allowed one."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in self.scope.get("headers", [])}
        allowed = self.gateway.config.gateway.control_ui.allowed_origins
        loopback = is_loopback_host(self.gateway.host)
        refusal = check_origin(headers.get("origin"), headers.get("host"), allowed, loopback_only=loopback)
        if refusal is None:
            return None
        log.warning("refused a browser socket from origin %r (%s)", refusal.origin, refusal.reason)
        return ErrorShape(
            code="INVALID_REQUEST",
            message=ORIGIN_NOT_ALLOWED,
            details={"code": "CONTROL_UI_ORIGIN_NOT_ALLOWED", "reason": refusal.reason},
        )

    def _client_info(self, req: ConnectRequest, scopes: frozenset[str]) -> ClientInfo:
        c = req.params.client
        return ClientInfo(
            conn_id=self.conn_id,
            ip=self.ip,
            role=req.role,
            scopes=scopes,
            protocol=req.protocol,
            client_id=c.id,
            client_mode=c.mode,
            client_version=c.version,
            platform=c.platform,
            instance_id=c.instance_id,
            display_name=c.display_name,
            device_family=c.device_family,
            model_identifier=c.model_identifier,
            caps=frozenset(req.params.caps or ()),
            connected_at_ms=_now_ms(),
        )

    def _reject(self, rejected: Rejected) -> None:
        if rejected.response is not None:
            self.push(orjson.dumps(rejected.response).decode())
        self._close(rejected.close)

    def _close(self, close: Close) -> None:
        self.outbox.close(close.code, close.reason)

    async def _serve(self) -> None:
        while not self.outbox.closing:
            text = await self._next_text()
            frame = decode_request(text)
            if isinstance(frame, FrameError):
                err = ErrorShape(code="INVALID_REQUEST", message=f"invalid request frame: {frame.message}")
                self.push(orjson.dumps(error_response(frame.frame_id or "invalid", err)).decode())
                continue
            if len(self._tasks) >= MAX_IN_FLIGHT:
                busy = Unavailable("too many requests in flight on this connection", retryable=True, retry_after_ms=100)
                self.push(orjson.dumps(error_response(frame.id, error_shape(busy))).decode())
                continue
            task = asyncio.create_task(self._handle(frame.id, frame.method, frame.params))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _push_early(self, request_id: str, payload: Any) -> None:
        self.push(orjson.dumps(ok_response(request_id, payload)).decode())

    async def _handle(self, request_id: str, method: str, params: Any) -> None:
        assert self.info is not None
        if method not in UNPACED:
            await self.hub.pacer.turn()
        call = MethodCall(
            self.gateway,
            self.info,
            request_id,
            method,
            early=lambda payload: self._push_early(request_id, payload),
        )
        try:
            payload = await self.gateway.methods.dispatch(call, params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure becomes an error frame, never a dead socket
            if isinstance(exc, HomarusError) and exc.message.startswith("unauthorized role:"):
                self._unauthorized_streak += 1
                if self._unauthorized_streak > MAX_UNAUTHORIZED_STREAK:
                    self.close(CloseCode.POLICY_VIOLATION, "repeated unauthorized calls")
            frame = error_response(
                request_id, error_shape(exc, protocol=self.info.protocol), getattr(exc, "payload", None)
            )
        else:
            self._unauthorized_streak = 0
            frame = ok_response(request_id, payload)
        self.push(orjson.dumps(frame).decode())


#: answered at once even in a burst: how a client or a monitor sees whether the gateway is alive
UNPACED = frozenset({"health", "status"})


class _Disconnected(Exception):
    pass


def _now_ms() -> int:
    return int(time.time() * 1000)
