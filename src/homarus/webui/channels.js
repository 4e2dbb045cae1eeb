// The channels page: each chat channel account (state, mode, who may DM it, last error, start and
// stop; a personal WhatsApp number is linked here by QR code), the pairing requests waiting for the
// owner (approve or reject), the dead letters of the outbox (send again or drop), and the devices
// (apps) waiting to pair with the gateway or paired. Kept live from `channels.pairing.*` events;
// the rest is refreshed when the page is shown and every few seconds while it is.

import { card, clear, duration, h, table } from "./dom.js";
import { unavailable } from "./status.js";

const POLL_MS = 5000;
const LINK_WAIT_MS = 25000;

export class ChannelsView {
  constructor(app) {
    this.app = app;
    this.grid = document.getElementById("channels-grid");
    this.badge = document.getElementById("channels-badge");
    this.pending = new Map(); // requestId -> request
    this.devicesPending = 0;
    this.commandOwnerConfigured = true;
    document.getElementById("channels-refresh").addEventListener("click", () => this.refresh());
    setInterval(() => {
      if (this.app.view === "channels") this.refresh();
      else this.tickCountdowns();
    }, POLL_MS);
  }

  async call(method, params = {}) {
    try {
      return { ok: true, value: await this.app.client.request(method, params) };
    } catch (err) {
      return { ok: false, error: err };
    }
  }

  // pending requests at connect time (for the tab's badge), whatever page is shown
  async load() {
    const [listed, devices] = await Promise.all([this.call("channels.pairing.list", {}), this.call("device.pair.list", {})]);
    this.devicesPending = devices.ok ? (devices.value.pending || []).length : 0;
    this.setPending(listed.ok ? listed.value : null);
    if (this.app.view === "channels") await this.refresh();
  }

  setPending(value) {
    this.pending = new Map((value?.requests || []).map((r) => [r.requestId, r]));
    this.commandOwnerConfigured = value ? value.commandOwnerConfigured !== false : true;
    this.paintBadge();
  }

  paintBadge() {
    const n = this.pending.size + this.devicesPending;
    this.badge.hidden = n === 0;
    this.badge.textContent = String(n);
  }

  onPairingRequested(payload) {
    if (!payload?.requestId) return;
    const isNew = !this.pending.has(payload.requestId);
    this.pending.set(payload.requestId, {
      ...payload,
      expiresAt: payload.expiresAtMs ? new Date(payload.expiresAtMs).toISOString() : undefined,
    });
    this.paintBadge();
    if (this.app.view === "channels") this.refresh();
    else if (isNew) this.app.toast(`Pairing request from ${payload.senderLabel || payload.senderId} (${payload.channel})`, "warn", "#/channels");
  }

  onDevicePairing() {
    if (this.app.view === "channels") this.refresh();
    else this.call("device.pair.list", {}).then((r) => {
      this.devicesPending = r.ok ? (r.value.pending || []).length : 0;
      this.paintBadge();
    });
  }

  onPairingResolved(payload) {
    if (!payload?.requestId || !this.pending.delete(payload.requestId)) return;
    this.paintBadge();
    if (this.app.view === "channels") this.refresh();
  }

  async refresh() {
    if (!this.app.client?.connected || this.busy) return;
    this.busy = true;
    try {
      const [status, pairing, devices] = await Promise.all([
        this.call("channels.status", {}), this.call("channels.pairing.list", {}), this.call("device.pair.list", {}),
      ]);
      this.devicesPending = devices.ok ? (devices.value.pending || []).length : 0;
      if (pairing.ok) this.setPending(pairing.value);
      else this.paintBadge();
      clear(this.grid);
      const devicesCard = this.devicesCard(devices);
      if (!status.ok) {
        this.grid.append(card("Channels", h("p.error-text", null, unavailable(status.error))), devicesCard);
        return;
      }
      const s = status.value;
      if (!(s.channelOrder || []).length) {
        this.grid.append(card("Channels", h("p.muted", null, "No chat channel is configured. See the channels you can add with ",
          h("code", null, "homarus channels list --available"), ", then add one with ", h("code", null, "homarus channels add <channel>"), ".")), devicesCard);
        return;
      }
      if (this.linking) this.grid.append(this.linkingCard());
      this.grid.append(this.accountsCard(s), this.pairingCard(pairing), this.deliveryCard(s.delivery || {}), devicesCard);
    } finally {
      this.busy = false;
    }
  }

  accountsCard(s) {
    const rows = [];
    for (const id of s.channelOrder) {
      for (const a of s.channelAccounts?.[id] || []) {
        const state = a.healthState || (a.running ? "running" : "stopped");
        const pill = h("span", { class: `pill ${state === "running" ? "ok" : state === "error" ? "bad" : state === "degraded" ? "warn" : ""}` }, state);
        const linkable = a.mode === "personal" && !a.connected && !this.linking;
        const action = linkable
          ? h("button.primary.small", { type: "button", "data-action": "link", onclick: () => this.link(id, a.accountId) }, "Link")
          : a.running
          ? h("button.ghost.small", { type: "button", "data-action": "stop", onclick: (ev) => this.act(ev, "channels.stop", { channel: id, accountId: a.accountId }) }, "Stop")
          : h("button.small", { type: "button", "data-action": "start", onclick: (ev) => this.act(ev, "channels.start", { channel: id, accountId: a.accountId }) }, "Start");
        rows.push([
          `${s.channelLabels?.[id] || id} / ${a.accountId}`,
          pill,
          a.mode || "—",
          a.dmPolicy || "pairing",
          a.identity?.username ? (a.identity.username.startsWith("+") ? a.identity.username : `@${a.identity.username}`) : "—",
          a.lastError ? h("span.error-text", null, a.lastError) : "—",
          action,
        ]);
      }
    }
    return card("Accounts", table(["Account", "State", "Mode", "DMs", "Bot", "Last error", ""], rows,
      (i) => ({ "data-account": `${rows[i][0]}` })));
  }

  // Linking a personal number: the code WhatsApp hands out, drawn again each time it changes,
  // until the phone has scanned one (web.login.start, then web.login.wait), or Cancel.
  async link(channel, accountId) {
    if (this.linking) return;
    this.linking = { channel, accountId, qr: null, message: "Asking WhatsApp for a code…" };
    await this.refresh();
    let r = await this.call("web.login.start", { channel, accountId, timeoutMs: 30000 });
    while (this.linking) {
      if (!r.ok) {
        this.app.toast(`Linking failed: ${r.error.message}`, "error");
        break;
      }
      const v = r.value;
      if (v.qrDataUrl) this.linking.qr = v.qrDataUrl;
      this.linking.message = v.message || "";
      this.paintLinking();
      if (v.connected) {
        this.app.toast(v.message || "Linked");
        break;
      }
      if (v.linking === false) {
        this.app.toast(v.message || "Linking stopped", "warn");
        break;
      }
      const params = { channel, accountId, timeoutMs: LINK_WAIT_MS };
      if (this.linking.qr) params.currentQrDataUrl = this.linking.qr;
      r = await this.call("web.login.wait", params);
    }
    this.linking = null;
    await this.refresh();
  }

  linkingCard() {
    const l = this.linking;
    const el = card("Link WhatsApp",
      h("p.muted.small", null, `${l.channel} / ${l.accountId}: on the phone, open WhatsApp → Settings → Linked devices → Link a device, and scan this code.`),
      l.qr ? h("img.qr", { src: l.qr, alt: "WhatsApp linking code", "data-qr": "", width: "264", height: "264" }) : null,
      h("p", { "data-link-message": "" }, l.message),
      h("button.ghost.small", { type: "button", "data-action": "cancel-link", onclick: () => { this.linking = null; this.refresh(); } }, "Cancel"));
    el.dataset.linking = `${l.channel}/${l.accountId}`;
    return el;
  }

  paintLinking() {
    const old = this.grid.querySelector("[data-linking]");
    if (old && this.linking) old.replaceWith(this.linkingCard());
  }

  pairingCard(pairing) {
    if (!pairing.ok) return card("Pairing requests", h("p.muted", null, unavailable(pairing.error)));
    const requests = [...this.pending.values()];
    if (!requests.length) {
      return card("Pairing requests", h("p.muted", null, "Nobody is waiting. A stranger who DMs the bot gets a code; it shows up here for you to approve."));
    }
    const owner = this.commandOwnerConfigured ? null
      : h("p.muted.small", null, "No command owner is configured yet: the first sender you approve becomes the owner (chat commands, approvals from the chat).");
    const rows = requests.map((r) => [
      h("span.mono", null, r.requestId),
      `${r.senderLabel || r.senderId} (${r.senderId})`,
      `${r.channel} / ${r.accountId}`,
      h("span.countdown.muted.small", { "data-expires": String(Date.parse(r.expiresAt) || "") }),
      h("span.row-actions", null,
        h("button.primary.small", { type: "button", "data-decision": "approve", onclick: (ev) => this.decide(ev, r, true) }, "Approve"),
        h("button.danger.small", { type: "button", "data-decision": "reject", onclick: (ev) => this.decide(ev, r, false) }, "Reject")),
    ]);
    const el = card("Pairing requests", owner, table(["Code", "Sender", "Channel", "Expires", ""], rows,
      (i) => ({ "data-request": requests[i].requestId })));
    this.tickCountdowns(el);
    return el;
  }

  deliveryCard(d) {
    const counts = d.outbox || {};
    const facts = ["pending", "sending", "transmitted", "sent", "dead"].filter((k) => typeof counts[k] === "number")
      .map((k) => `${counts[k]} ${k}`).join(" · ");
    const dead = d.deadLetters || [];
    const rows = dead.map((x) => [
      String(x.id),
      `${x.target?.channel} / ${x.target?.chatId}`,
      x.preview || "",
      h("span.error-text", null, x.lastError || ""),
      h("span.row-actions", null,
        h("button.small", { type: "button", "data-action": "replay", onclick: (ev) => this.act(ev, "channels.outbox.replay", { id: x.id }) }, "Send again"),
        h("button.ghost.small", { type: "button", "data-action": "drop", onclick: (ev) => this.act(ev, "channels.outbox.drop", { id: x.id }) }, "Drop")),
    ]);
    return card("Delivery",
      h("p.muted.small", null, facts || "Nothing sent yet."),
      dead.length ? [h("h4", null, `Dead letters (${dead.length})`), table(["#", "To", "Message", "Error", ""], rows, (i) => ({ "data-dead": String(dead[i].id) }))]
        : h("p.muted", null, "No dead letters: every reply was delivered or is on its way."));
  }

  devicesCard(devices) {
    if (!devices.ok) return card("Devices", h("p.muted", null, unavailable(devices.error)));
    const pending = devices.value.pending || [];
    const paired = devices.value.paired || [];
    const rows = [
      ...pending.map((d) => [
        h("span.pill.warn", null, "waiting"), d.displayName || d.clientId || "?", d.platform || "", `${d.remoteIp || ""}`,
        h("span.row-actions", { "data-device-request": d.requestId },
          h("button.primary.small", { type: "button", "data-decision": "approve", onclick: (ev) => this.act(ev, "device.pair.approve", { requestId: d.requestId }) }, "Approve"),
          h("button.danger.small", { type: "button", "data-decision": "reject", onclick: (ev) => this.act(ev, "device.pair.reject", { requestId: d.requestId }) }, "Reject")),
      ]),
      ...paired.map((d) => [
        h("span.pill.ok", null, "paired"), d.displayName || d.clientId || "?", d.platform || "", d.deviceId.slice(0, 12) + "…",
        h("span.row-actions", { "data-device": d.deviceId },
          h("button.ghost.small", { type: "button", "data-action": "remove", onclick: (ev) => this.act(ev, "device.pair.remove", { deviceId: d.deviceId }) }, "Remove")),
      ]),
    ];
    return card("Devices", rows.length ? table(["", "Device", "Platform", "From / id", ""], rows)
      : h("p.muted", null, "No device has asked to pair. The original's phone and desktop apps pair here when they connect from another machine."));
  }

  tickCountdowns(root = this.grid) {
    for (const el of root.querySelectorAll(".countdown")) {
      const at = Number(el.dataset.expires);
      const left = at - Date.now();
      el.textContent = !at ? "—" : left > 0 ? `in ${duration(left)}` : "expired";
    }
  }

  async decide(ev, r, approve) {
    const buttons = ev.currentTarget.closest("tr").querySelectorAll("button");
    for (const b of buttons) b.disabled = true;
    const ident = { channel: r.channel, accountId: r.accountId, requestId: r.requestId };
    const params = approve ? { ...ident, notify: true, bootstrapCommandOwner: !this.commandOwnerConfigured } : ident;
    try {
      await this.app.client.request(approve ? "channels.pairing.approve" : "channels.pairing.dismiss", params);
      this.pending.delete(r.requestId);
      this.paintBadge();
      this.app.toast(`${approve ? "Approved" : "Rejected"}: ${r.senderLabel || r.senderId}`);
    } catch (err) {
      this.app.toast(`Could not ${approve ? "approve" : "reject"}: ${err.message}`, "error");
    }
    await this.refresh();
  }

  async act(ev, method, params) {
    ev.currentTarget.disabled = true;
    try {
      await this.app.client.request(method, params);
    } catch (err) {
      this.app.toast(`${method} failed: ${err.message}`, "error");
    }
    await this.refresh();
  }
}
