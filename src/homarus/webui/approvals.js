// The approvals panel: pending exec and plugin approvals, listed on connect and kept live from
// `exec.approval.*` / `plugin.approval.*` events; allow once, allow always, or deny.

import { clear, duration, h } from "./dom.js";

const KINDS = ["exec", "plugin"];

export class ApprovalsView {
  constructor(app) {
    this.app = app;
    this.listEl = document.getElementById("approval-list");
    this.badge = document.getElementById("approvals-badge");
    this.chatPill = document.getElementById("chat-approvals");
    this.items = new Map(); // id -> {kind, id, request, createdAtMs, expiresAtMs}
    setInterval(() => this.tickCountdowns(), 1000);
  }

  async load() {
    const fresh = new Map();
    for (const kind of KINDS) {
      try {
        const rows = await this.app.client.request(`${kind}.approval.list`, {});
        for (const row of rows || []) fresh.set(row.id, { kind, ...row });
      } catch (err) {
        // a token without operator.approvals cannot list them; say so once, in the panel
        if (!/unknown method/.test(err.message)) this.error = err.message;
      }
    }
    this.items = fresh;
    this.render();
  }

  onRequested(kind, payload) {
    if (!payload?.id) return;
    const isNew = !this.items.has(payload.id);
    this.items.set(payload.id, { kind, ...payload });
    this.render();
    if (isNew && this.app.view !== "approvals") {
      this.app.toast(`Approval needed: ${this.describe({ kind, ...payload })}`, "warn", "#/approvals");
    }
  }

  onResolved(kind, payload) {
    if (!payload?.id || !this.items.delete(payload.id)) return;
    this.render();
  }

  describe(item) {
    const r = item.request || {};
    if (item.kind === "exec") return r.commandPreview || r.command || "a command";
    return r.title || "a plugin action";
  }

  render() {
    const n = this.items.size;
    this.badge.hidden = n === 0;
    this.badge.textContent = String(n);
    this.chatPill.hidden = n === 0;
    this.chatPill.textContent = n === 1 ? "1 approval waiting" : `${n} approvals waiting`;
    clear(this.listEl);
    if (this.error && n === 0) {
      this.listEl.append(h("div.empty.error-text", null, `Approvals are not available with this token: ${this.error}`));
      return;
    }
    if (n === 0) {
      this.listEl.append(h("div.empty.muted", null, h("strong", null, "Nothing is waiting."),
        " When the agent wants to run a command outside the allowlist, or a plugin asks for consent, it appears here."));
      return;
    }
    const sorted = [...this.items.values()].sort((a, b) => (a.createdAtMs || 0) - (b.createdAtMs || 0));
    for (const item of sorted) this.listEl.append(this.card(item));
  }

  card(item) {
    const r = item.request || {};
    const facts = [];
    const fact = (label, value) => value && facts.push(h("div.fact", null, h("span.muted", null, label), h("span.mono", null, String(value))));
    let main;
    if (item.kind === "exec") {
      main = h("pre.approval-command", null, r.command || r.commandPreview || "");
      fact("Working directory", r.cwd);
      fact("Agent", r.agentId);
      fact("Session", r.sessionKey);
      fact("Host", r.host);
      if (Array.isArray(r.allowAlwaysPatterns) && r.allowAlwaysPatterns.length) fact("Always allow adds", r.allowAlwaysPatterns.join(", "));
    } else {
      main = h("div", null, h("div.approval-title", null, r.title || "Plugin action"), r.description ? h("p", null, r.description) : null);
      fact("Plugin", r.pluginId);
      fact("Tool", r.toolName);
      fact("Severity", r.severity);
      fact("Session", r.sessionKey);
    }
    const buttons = h("div.approval-actions", null,
      h("button.primary", { type: "button", "data-decision": "allow-once", onclick: (ev) => this.resolve(item, "allow-once", ev.currentTarget) }, "Allow once"),
      h("button", { type: "button", "data-decision": "allow-always", onclick: (ev) => this.resolve(item, "allow-always", ev.currentTarget) }, "Always allow"),
      h("button.danger", { type: "button", "data-decision": "deny", onclick: (ev) => this.resolve(item, "deny", ev.currentTarget) }, "Deny"));
    const expires = h("span.countdown.muted.small", { "data-expires": String(item.expiresAtMs || "") });
    const el = h("article.approval-card", { "data-id": item.id, "data-kind": item.kind, class: r.severity === "critical" ? "critical" : "" },
      h("div.approval-head", null, h("span.kind", null, item.kind === "exec" ? "Command" : "Plugin"),
        h("span.mono.small.muted", null, item.id.slice(0, 8)), h("span.spacer"), expires),
      main, h("div.facts", null, facts), buttons);
    this.paintCountdown(expires);
    return el;
  }

  paintCountdown(el) {
    const at = Number(el.dataset.expires);
    if (!at) return;
    const left = at - Date.now();
    el.textContent = left > 0 ? `expires in ${duration(left)}` : "expired";
  }

  tickCountdowns() {
    for (const el of this.listEl.querySelectorAll(".countdown")) this.paintCountdown(el);
  }

  async resolve(item, decision, button) {
    const card = button.closest(".approval-card");
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    try {
      await this.app.client.request(`${item.kind}.approval.resolve`, { id: item.id, decision });
      this.items.delete(item.id);
      this.render();
      const verb = decision === "deny" ? "Denied" : decision === "allow-always" ? "Always allowed" : "Allowed once";
      this.app.toast(`${verb}: ${this.describe(item)}`);
    } catch (err) {
      for (const b of card.querySelectorAll("button")) b.disabled = false;
      this.app.toast(`Could not resolve: ${err.message}`, "error");
      if (err.details?.reason === "APPROVAL_NOT_FOUND") {
        this.items.delete(item.id);
        this.render();
      }
    }
  }
}
