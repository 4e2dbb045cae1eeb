// The sessions sidebar: list, search, create, rename (label), reset, delete; live via
// `sessions.changed`. Destructive actions confirm inline (a second click), not with dialogs.

import { clear, h, relTime } from "./dom.js";

const CONFIRM_MS = 4000;

export class SessionsView {
  constructor(app) {
    this.app = app;
    this.list = document.getElementById("session-list");
    this.search = document.getElementById("session-search");
    this.rows = [];
    this.timer = null;
    this.seq = 0;
    // a live refresh must not wipe a rename in progress or an armed confirm: render after it
    this.holds = 0;
    this.dirty = false;
    this.search.addEventListener("input", () => this.refreshSoon(200));
    document.getElementById("session-new").addEventListener("click", () => this.create());
  }

  refreshSoon(ms = 300) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), ms);
  }

  async refresh() {
    if (!this.app.client?.connected) return;
    const seq = ++this.seq;
    const q = this.search.value.trim();
    try {
      const res = await this.app.client.request("sessions.list", {
        includeLastMessage: true,
        limit: 200,
        ...(q ? { search: q.slice(0, 200) } : {}),
      });
      if (seq !== this.seq) return;
      this.rows = (res.sessions || []).sort((a, b) => (b.updatedAt || 0) - (a.updatedAt || 0));
      this.render();
    } catch (err) {
      if (seq === this.seq) this.app.toast(`Could not list sessions: ${err.message}`, "error");
    }
  }

  row(key) {
    return this.rows.find((r) => r.key === key);
  }

  hold() {
    this.holds += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds -= 1;
      if (this.holds === 0 && this.dirty) this.render();
    };
  }

  render() {
    if (this.holds > 0) {
      this.dirty = true;
      return;
    }
    this.dirty = false;
    clear(this.list);
    const current = this.app.sessionKey;
    if (!this.rows.length) {
      this.list.append(h("li.empty.muted", null, this.search.value.trim() ? "No session matches." : "No sessions yet."));
    }
    for (const row of this.rows) this.list.append(this.renderRow(row, row.key === current));
    this.app.chat.setTitle(this.row(current));
  }

  renderRow(row, active) {
    const title = this.app.sessionTitle(row);
    const actions = h("div.session-actions", null,
      h("button.icon", { type: "button", title: "Rename", "aria-label": "Rename", "data-action": "rename",
        onclick: (ev) => { ev.stopPropagation(); this.rename(row, li); } }, "✎"),
      h("button.icon", { type: "button", title: "Reset (start a fresh transcript)", "aria-label": "Reset", "data-action": "reset",
        onclick: (ev) => { ev.stopPropagation(); this.confirm(ev.currentTarget, "Reset?", () => this.reset(row)); } }, "↺"),
      h("button.icon.danger-text", { type: "button", title: "Delete", "aria-label": "Delete", "data-action": "delete",
        onclick: (ev) => { ev.stopPropagation(); this.confirm(ev.currentTarget, "Delete?", () => this.remove(row)); } }, "✕"));
    const li = h("li.session", {
      class: active ? "active" : "",
      tabindex: "0",
      "data-key": row.key,
      onclick: () => this.app.selectSession(row.key),
      onkeydown: (ev) => { if (ev.key === "Enter" && ev.target === li) this.app.selectSession(row.key); },
    },
    h("div.session-top", null,
      h("span.session-title", null, title),
      row.status === "running" || row.running ? h("span.dot.live", { title: "running" }) : null,
      h("span.session-time.muted.small", null, relTime(row.updatedAt))),
    row.lastMessagePreview ? h("div.session-preview.muted.small", null, row.lastMessagePreview.slice(0, 140)) : null,
    actions);
    return li;
  }

  confirm(button, label, action) {
    if (button.dataset.armed) {
      delete button.dataset.armed;
      button._release?.();
      action();
      return;
    }
    const original = button.textContent;
    button.dataset.armed = "1";
    button.textContent = label;
    button.classList.add("armed");
    button._release = this.hold();
    setTimeout(() => {
      button._release?.();
      if (!button.isConnected || !button.dataset.armed) return;
      delete button.dataset.armed;
      button.textContent = original;
      button.classList.remove("armed");
    }, CONFIRM_MS);
  }

  rename(row, li) {
    const titleEl = li.querySelector(".session-title");
    const input = h("input.rename", { type: "text", value: row.label || "", maxlength: "100", placeholder: "Label", "aria-label": "Session label" });
    let done = false;
    const release = this.hold();
    const finish = async (save) => {
      if (done) return;
      done = true;
      if (save) {
        const label = input.value.trim();
        try {
          await this.app.client.request("sessions.patch", { key: row.key, label: label || null });
          row.label = label || undefined;
        } catch (err) {
          this.app.toast(`Could not rename: ${err.message}`, "error");
        }
      }
      release();
      this.render();
    };
    input.addEventListener("click", (ev) => ev.stopPropagation());
    input.addEventListener("keydown", (ev) => {
      ev.stopPropagation();
      if (ev.key === "Enter") finish(true);
      else if (ev.key === "Escape") finish(false);
    });
    input.addEventListener("blur", () => finish(true));
    titleEl.replaceWith(input);
    input.focus();
    input.select();
  }

  async create() {
    try {
      const res = await this.app.client.request("sessions.create", {});
      await this.refresh();
      this.app.selectSession(res.key);
      document.getElementById("composer-input").focus();
    } catch (err) {
      this.app.toast(`Could not create a session: ${err.message}`, "error");
    }
  }

  async reset(row) {
    try {
      await this.app.client.request("sessions.reset", { key: row.key, reason: "reset" });
      this.app.toast("Session reset: a fresh transcript starts now.");
      if (row.key === this.app.sessionKey) this.app.chat.load();
      this.refreshSoon(0);
    } catch (err) {
      this.app.toast(`Could not reset: ${err.message}`, "error");
    }
  }

  async remove(row) {
    try {
      await this.app.client.request("sessions.delete", { key: row.key });
      this.rows = this.rows.filter((r) => r.key !== row.key);
      if (row.key === this.app.sessionKey) this.app.selectSession(this.app.mainSessionKey());
      else this.render();
      this.refreshSoon(0);
    } catch (err) {
      this.app.toast(`Could not delete: ${err.message}`, "error");
    }
  }

  onChanged(payload) {
    this.refreshSoon();
    const key = payload?.sessionKey;
    if (!key || key !== this.app.sessionKey) return;
    if (payload.reason === "reset" || payload.reason === "new") this.app.chat.load();
    // deleted elsewhere (another tab, the CLI): fall back to the main session
    else if (payload.reason === "delete") this.app.selectSession(this.app.mainSessionKey());
  }
}
