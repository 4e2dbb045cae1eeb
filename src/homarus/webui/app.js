// Homarus Control UI: wiring of the client, the views and the connection banner.
//
// Views are switched by the URL hash (#/chat, #/approvals, #/channels, #/status). The token lives in
// localStorage under "homarus.token" and only ever travels inside the connect request.

import { ApprovalsView } from "./approvals.js";
import { ChannelsView } from "./channels.js";
import { ChatView } from "./chat.js";
import { GatewayClient, gatewayUrl } from "./client.js";
import { clear, h } from "./dom.js";
import { SessionsView } from "./sessions.js";
import { StatusView } from "./status.js";

const TOKEN_KEY = "homarus.token";
const SESSION_KEY = "homarus.session";
const VIEWS = ["chat", "approvals", "channels", "status"];

class App {
  constructor() {
    this.root = document.getElementById("app");
    this.banner = document.getElementById("banner");
    this.conn = document.getElementById("conn");
    this.connText = document.getElementById("conn-text");
    this.toasts = document.getElementById("toasts");
    this.client = null;
    this.view = "chat";
    this.sessionKey = localStorage.getItem(SESSION_KEY) || "";
    this.chat = new ChatView(this);
    this.sessions = new SessionsView(this);
    this.approvals = new ApprovalsView(this);
    this.status = new StatusView(this);
    this.channels = new ChannelsView(this);
    this.bannerTimer = null;
    this.wireLogin();
    window.addEventListener("hashchange", () => this.route());
    document.getElementById("token-button").addEventListener("click", () => this.showLogin());
  }

  start() {
    const token = localStorage.getItem(TOKEN_KEY);
    if (token === null) {
      this.showLogin();
      return;
    }
    this.connect(token);
  }

  // -- login ------------------------------------------------------------------------------
  wireLogin() {
    const form = document.getElementById("login-form");
    const input = document.getElementById("token-input");
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = input.value.trim();
      localStorage.setItem(TOKEN_KEY, token);
      input.value = "";
      this.connect(token);
    });
    document.getElementById("login-forget").addEventListener("click", () => {
      localStorage.removeItem(TOKEN_KEY);
      this.client?.stop();
      this.client = null;
      this.setConn("idle", "Not connected");
      this.hideBanner();
      this.toast("The stored token was removed from this browser.");
    });
  }

  showLogin(error) {
    this.loginShown = true;
    const err = document.getElementById("login-error");
    err.hidden = !error;
    err.textContent = error || "";
    this.showView("login");
    document.getElementById("token-input").focus();
  }

  connect(token) {
    this.client?.stop();
    this.loginShown = false;
    this.client = new GatewayClient({
      url: gatewayUrl(),
      token: token || undefined,
      onEvent: (name, payload) => this.onEvent(name, payload),
      onState: (s) => this.onState(s),
    });
    this.route();
    this.client.start();
  }

  // -- connection state -----------------------------------------------------------------------
  setConn(state, text) {
    this.conn.dataset.state = state;
    this.connText.textContent = text;
  }

  onState(s) {
    clearInterval(this.bannerTimer);
    if (s.state !== "connected") delete this.root.dataset.ready;
    if (s.state === "connecting") {
      this.setConn("connecting", s.attempt ? "Reconnecting…" : "Connecting…");
    } else if (s.state === "connected") {
      this.setConn("connected", "Connected");
      this.hideBanner();
      this.onConnected(s.hello);
    } else if (s.state === "disconnected") {
      this.setConn("disconnected", "Disconnected");
      this.chat.onDisconnected();
      const paint = () => {
        const left = Math.max(0, Math.ceil((s.retryAt - Date.now()) / 1000));
        this.showBanner("disconnected", `Disconnected: ${s.reason}. Reconnecting in ${left} s…`,
          h("button", { type: "button", onclick: () => this.client?.retryNow() }, "Retry now"));
      };
      paint();
      this.bannerTimer = setInterval(paint, 1000);
    } else if (s.state === "unauthorized") {
      this.setConn("unauthorized", "Unauthorized");
      this.showBanner("unauthorized", `Unauthorized: the gateway rejected the token (${s.message}).`,
        h("button", { type: "button", onclick: () => this.showLogin(s.message) }, "Change token"));
      this.showLogin(s.message);
    } else if (s.state === "refused") {
      this.setConn("unauthorized", "Refused");
      this.showBanner("unauthorized", `The gateway refused this page: ${s.message}`);
    }
    this.chat.updateButtons();
  }

  showBanner(kind, text, ...extra) {
    this.banner.hidden = false;
    this.banner.className = `banner ${kind}`;
    clear(this.banner).append(h("span", null, text), ...extra);
  }

  hideBanner() {
    this.banner.hidden = true;
    clear(this.banner);
  }

  mainSessionKey() {
    return this.client?.hello?.snapshot?.sessionDefaults?.mainSessionKey || "agent:main:main";
  }

  async onConnected(hello) {
    if (!this.sessionKey) this.sessionKey = this.mainSessionKey();
    if (this.view === "login" || this.loginShown) {
      this.loginShown = false;
      this.route();
    }
    const c = this.client;
    c.request("sessions.subscribe", {}).catch(() => {});
    await Promise.all([this.sessions.refresh(), this.approvals.load(), this.channels.load(), this.chat.load()]);
    this.root.dataset.ready = "1"; // first load done (tests and screenshots wait for this)
    if (this.view === "status") this.status.refresh();
    this.chat.updateButtons();
    document.title = `Homarus · ${hello?.server?.version || ""}`.trim();
  }

  onEvent(name, payload) {
    switch (name) {
      case "chat":
        this.chat.onChat(payload);
        break;
      case "agent":
        this.chat.onAgent(payload);
        break;
      case "sessions.changed":
        this.sessions.onChanged(payload);
        break;
      case "exec.approval.requested":
        this.approvals.onRequested("exec", payload);
        break;
      case "exec.approval.resolved":
        this.approvals.onResolved("exec", payload);
        break;
      case "plugin.approval.requested":
        this.approvals.onRequested("plugin", payload);
        break;
      case "plugin.approval.resolved":
        this.approvals.onResolved("plugin", payload);
        break;
      case "channels.pairing.requested":
        this.channels.onPairingRequested(payload);
        break;
      case "channels.pairing.resolved":
        this.channels.onPairingResolved(payload);
        break;
      case "device.pair.requested":
      case "device.pair.resolved":
        this.channels.onDevicePairing(payload);
        break;
      case "shutdown":
        this.showBanner("disconnected", "The gateway is restarting; reconnecting when it is back…");
        break;
      case "cron":
        if (this.view === "status") this.status.refresh();
        break;
      default:
        break;
    }
  }

  // -- views ----------------------------------------------------------------------------------
  route() {
    const name = (location.hash.match(/^#\/(\w+)/) || [])[1];
    this.showView(VIEWS.includes(name) ? name : "chat");
  }

  showView(name) {
    this.view = name;
    this.root.dataset.view = name;
    for (const v of ["login", ...VIEWS]) document.getElementById(`view-${v}`).hidden = v !== name;
    for (const tab of document.querySelectorAll("[data-tab]")) {
      tab.classList.toggle("active", tab.dataset.tab === name);
      if (tab.dataset.tab === name) tab.setAttribute("aria-current", "page");
      else tab.removeAttribute("aria-current");
    }
    if (name === "status") this.status.refresh();
    if (name === "channels") this.channels.refresh();
    if (name === "chat") document.getElementById("composer-input").focus();
  }

  selectSession(key) {
    if (!key) return;
    this.sessionKey = key;
    localStorage.setItem(SESSION_KEY, key);
    this.sessions.render();
    this.chat.load();
    if (this.view !== "chat") location.hash = "#/chat";
  }

  sessionTitle(row) {
    if (!row) return "";
    return row.label || row.displayName || row.derivedTitle || row.key.replace(/^agent:[^:]+:/, "");
  }

  toast(text, kind = "info", href = null) {
    const el = h(href ? "a.toast" : "div.toast", { class: kind, ...(href ? { href } : {}) }, text);
    this.toasts.append(el);
    setTimeout(() => el.classList.add("leaving"), 4200);
    setTimeout(() => el.remove(), 4600);
  }
}

new App().start();
