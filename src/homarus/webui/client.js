// The gateway WebSocket client: handshake, requests, events, reconnect.
//
// Speaks the same protocol as every other client: wait for `connect.challenge`, send `connect`
// with the token (never in the URL), get `hello-ok`, then `req`/`res` by id and `event` frames.
// After a drop it reconnects with exponential backoff (0.5 s → 15 s, with jitter) unless the
// gateway said the token is wrong or the page's origin is not allowed: retrying those would only
// burn the failed-auth budget, so the UI asks the operator instead.

import { uuid } from "./dom.js";

export const SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals"];
const CLIENT_VERSION = "0.1.0";
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 15000;
const REQUEST_TIMEOUT_MS = 60000;
const FATAL = new Set(["CONTROL_UI_ORIGIN_NOT_ALLOWED"]);

export class RequestError extends Error {
  constructor(error) {
    super(error?.message || "request failed");
    this.code = error?.code || "UNAVAILABLE";
    this.details = error?.details;
  }
}

/**
 * States reported to onState({state, ...}):
 *  connecting | connected (hello) | disconnected (retryInMs, reason) | unauthorized (message, code)
 *  | refused (message: origin not allowed).
 */
export class GatewayClient {
  constructor({ url, token, onEvent, onState }) {
    this.url = url;
    this.token = token;
    this.onEvent = onEvent;
    this.onState = onState;
    this.ws = null;
    this.pending = new Map();
    this.hello = null;
    this.attempt = 0;
    this.stopped = false;
    this.retryTimer = null;
    this.watchdog = null;
    this.lastFrameAt = 0;
    this.sawShutdown = false;
    this.instanceId = sessionStorage.getItem("homarus.instance") || uuid();
    sessionStorage.setItem("homarus.instance", this.instanceId);
  }

  start() {
    this.stopped = false;
    this.open();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.watchdog);
    if (this.ws) this.ws.close(1000, "bye");
    this.ws = null;
  }

  /** Try again now (the "Retry" button; also resets the backoff). */
  retryNow() {
    clearTimeout(this.retryTimer);
    this.attempt = 0;
    if (this.ws) {
      this.ws.onclose = null;
      this.ws.close(1000, "retry");
      this.ws = null;
    }
    this.stopped = false;
    this.open();
  }

  get connected() {
    return this.hello !== null && this.ws?.readyState === WebSocket.OPEN;
  }

  open() {
    clearTimeout(this.retryTimer);
    this.hello = null;
    this.onState({ state: "connecting", attempt: this.attempt });
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      this.scheduleRetry(String(err));
      return;
    }
    this.ws = ws;
    let fatal = null;
    ws.onmessage = (ev) => {
      this.lastFrameAt = Date.now();
      let frame;
      try {
        frame = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (frame.type === "event" && frame.event === "connect.challenge" && !this.hello) {
        this.sendConnect(ws).then(
          (hello) => this.onHello(hello),
          (err) => {
            fatal = err;
            this.onConnectError(err);
            ws.close(4008, "connect failed");
          },
        );
        return;
      }
      if (frame.type === "res") this.onResponse(frame);
      else if (frame.type === "event") this.dispatchEvent(frame);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.hello = null;
      clearInterval(this.watchdog);
      for (const [, p] of this.pending) p.reject(new RequestError({ code: "UNAVAILABLE", message: "disconnected" }));
      this.pending.clear();
      if (this.stopped || (fatal && !fatal.retryable)) return;
      let reason = ev.reason || `connection closed (${ev.code})`;
      if (ev.code === 1012 || this.sawShutdown) reason = "the gateway is restarting";
      else if (ev.code === 1006) reason = "the connection was lost";
      else if (ev.code === 4000) reason = "the gateway stopped answering";
      this.sawShutdown = false;
      this.scheduleRetry(reason, fatal?.retryAfterMs);
    };
  }

  scheduleRetry(reason, atLeastMs = 0) {
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    const delay = Math.max(atLeastMs || 0, Math.round(base * (0.8 + Math.random() * 0.4)));
    this.attempt += 1;
    this.onState({ state: "disconnected", reason, retryInMs: delay, retryAt: Date.now() + delay });
    this.retryTimer = setTimeout(() => this.open(), delay);
  }

  sendConnect(ws) {
    const params = {
      minProtocol: 3,
      maxProtocol: 3,
      client: {
        id: "homarus-control-ui",
        version: CLIENT_VERSION,
        platform: (navigator.userAgentData?.platform || navigator.platform || "web").slice(0, 100) || "web",
        mode: "webchat",
        instanceId: this.instanceId,
        displayName: "Control UI",
      },
      role: "operator",
      scopes: SCOPES,
      caps: ["tool-events"],
      locale: (navigator.language || "en").slice(0, 60),
      userAgent: navigator.userAgent.slice(0, 1000),
    };
    if (this.token) params.auth = { token: this.token };
    return this.rawRequest(ws, "connect", params);
  }

  onHello(hello) {
    this.hello = hello;
    this.attempt = 0;
    const tickMs = hello?.policy?.tickIntervalMs || 30000;
    clearInterval(this.watchdog);
    // the gateway ticks every tickIntervalMs; silence for two intervals means a dead connection
    this.watchdog = setInterval(() => {
      if (this.ws && Date.now() - this.lastFrameAt > tickMs * 2) this.ws.close(4000, "tick timeout");
    }, Math.min(tickMs, 10000));
    this.onState({ state: "connected", hello });
  }

  onConnectError(err) {
    const code = err.details?.code || "";
    if (FATAL.has(code)) {
      err.retryable = false;
      this.onState({ state: "refused", message: err.message, code });
    } else if (code === "AUTH_RATE_LIMITED") {
      err.retryable = true;
      err.retryAfterMs = err.details?.retryAfterMs || 60000;
    } else if (code.startsWith("AUTH_") || /unauthori[sz]ed/i.test(err.message)) {
      err.retryable = false;
      this.onState({ state: "unauthorized", message: err.message, code });
    } else {
      err.retryable = true;
    }
  }

  dispatchEvent(frame) {
    if (frame.event === "shutdown") this.sawShutdown = true;
    try {
      this.onEvent(frame.event, frame.payload, frame);
    } catch (err) {
      console.error("event handler failed", frame.event, err);
    }
  }

  onResponse(frame) {
    const p = this.pending.get(frame.id);
    if (!p) return;
    // `agent` and two-phase approvals answer twice; the first "accepted" answer is the one we want
    this.pending.delete(frame.id);
    clearTimeout(p.timer);
    if (frame.ok) p.resolve(frame.payload);
    else p.reject(new RequestError(frame.error));
  }

  rawRequest(ws, method, params) {
    const id = uuid();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RequestError({ code: "UNAVAILABLE", message: `${method} timed out` }));
      }, REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(JSON.stringify({ type: "req", id, method, params }));
    });
  }

  /** Call a gateway method; rejects with RequestError (code "UNAVAILABLE" when offline). */
  request(method, params = {}) {
    if (!this.connected) {
      return Promise.reject(new RequestError({ code: "UNAVAILABLE", message: "not connected to the gateway" }));
    }
    return this.rawRequest(this.ws, method, params);
  }
}

/** The WebSocket URL of the gateway that served this page (same host and port). */
export function gatewayUrl() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/`;
}
