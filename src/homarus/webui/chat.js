// The chat view: history, the composer, streaming replies and tool cards.
//
// A run is one container in the log. `chat` events carry the cumulative text of the current
// assistant turn; `agent` tool events (start/update/result) become cards. A tool start seals the
// text bubble above it, so the next turn's text starts a new bubble below the card and the log
// reads in the order things happened.

import { clear, duration, h, messageText, uuid } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const PREVIEW_CHARS = 1200; // tool arguments/results longer than this collapse behind "Show more"
const ARGS_SUMMARY_CHARS = 90;

/** A <pre> that shows the first PREVIEW_CHARS characters and a "Show more" toggle for the rest. */
export function truncatedPre(text, cls = "") {
  const full = String(text);
  const pre = h(`pre.tool-pre${cls ? "." + cls : ""}`);
  const wrap = h("div.truncated", null, pre);
  if (full.length <= PREVIEW_CHARS) {
    pre.textContent = full;
    return wrap;
  }
  let expanded = false;
  const toggle = h("button.link.show-more", { type: "button" });
  const paint = () => {
    pre.textContent = expanded ? full : full.slice(0, PREVIEW_CHARS) + "…";
    toggle.textContent = expanded ? "Show less" : `Show more (${(full.length - PREVIEW_CHARS).toLocaleString()} more characters)`;
  };
  toggle.addEventListener("click", () => {
    expanded = !expanded;
    paint();
  });
  paint();
  wrap.append(toggle);
  return wrap;
}

function asText(value) {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value?.content)) return messageText(value);
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

function argsSummary(name, args) {
  if (!args || typeof args !== "object") return "";
  const first = args.command ?? args.path ?? args.query ?? args.url ?? args.message;
  let s = typeof first === "string" ? first : JSON.stringify(args);
  s = s.replace(/\s+/g, " ");
  return s.length > ARGS_SUMMARY_CHARS ? s.slice(0, ARGS_SUMMARY_CHARS) + "…" : s;
}

class ToolCard {
  constructor({ name, toolCallId, args }, startedAt = Date.now()) {
    this.id = toolCallId;
    this.startedAt = startedAt;
    this.done = false;
    this.status = h("span.tool-status", null, "running");
    this.time = h("span.tool-time");
    this.resultBox = h("div.tool-section.tool-result-box", { hidden: true });
    this.el = h("details.tool-card.running", { open: true, "data-tool": name || "tool", "data-call": toolCallId || "" },
      h("summary", null,
        h("span.tool-icon", { "aria-hidden": "true" }),
        h("span.tool-name", null, name || "tool"),
        h("span.tool-args-summary.mono", null, argsSummary(name, args)),
        h("span.spacer"),
        this.status,
        this.time),
      h("div.tool-body", null,
        h("div.tool-section", null, h("div.tool-label", null, "Arguments"),
          truncatedPre(args === undefined ? "" : JSON.stringify(args, null, 2), "tool-args")),
        this.resultBox));
    this.tick();
  }

  tick() {
    if (!this.done && this.startedAt) this.time.textContent = duration(Date.now() - this.startedAt);
  }

  showResult(label, text, isError) {
    clear(this.resultBox);
    this.resultBox.hidden = false;
    this.resultBox.append(h("div.tool-label", null, label), truncatedPre(text || "(no output)", isError ? "tool-error" : "tool-output"));
  }

  update(partial) {
    this.showResult("Output so far", asText(partial), false);
  }

  result({ isError, result, meta }, fromHistory = false) {
    this.done = true;
    this.el.classList.remove("running");
    this.el.classList.add(isError ? "error" : "ok");
    this.status.textContent = isError ? "error" : "done";
    const ms = meta?.durationMs ?? (fromHistory ? undefined : Date.now() - this.startedAt);
    this.time.textContent = ms === undefined ? "" : duration(ms);
    this.showResult(isError ? "Error" : "Result", asText(result), isError);
    if (fromHistory) this.el.open = false;
  }

  interrupt(label) {
    if (this.done) return;
    this.done = true;
    this.el.classList.remove("running");
    this.el.classList.add("error");
    this.status.textContent = label;
  }
}

function assistantBubble() {
  const body = h("div.md");
  const el = h("div.msg.assistant", null, h("div.msg-role", null, "Homarus"), body);
  el._body = body;
  el._text = "";
  return el;
}

function setBubbleText(bubble, text) {
  if (bubble._text === text) return;
  bubble._text = text;
  clear(bubble._body).append(renderMarkdown(text));
}

class RunView {
  constructor(chat, runId, { mine = false } = {}) {
    this.chat = chat;
    this.runId = runId;
    this.mine = mine;
    this.el = h("div.run", { "data-run": runId });
    this.bubble = null;
    this.sealedText = "";
    this.tools = new Map();
    this.active = true;
    this.typing = h("div.typing", { "aria-label": "Homarus is working" }, h("span"), h("span"), h("span"));
    this.el.append(this.typing);
  }

  text(text) {
    if (!text) return;
    if (!this.bubble) {
      if (text === this.sealedText) return; // the final repeats the turn already shown above a tool card
      this.bubble = assistantBubble();
      this.el.insertBefore(this.bubble, this.typing);
    }
    setBubbleText(this.bubble, text);
    this.bubble.classList.add("streaming");
    this.chat.stickToBottom();
  }

  seal() {
    if (this.bubble) {
      this.sealedText = this.bubble._text;
      this.bubble.classList.remove("streaming");
      this.bubble = null;
    }
  }

  tool(data) {
    let card = this.tools.get(data.toolCallId);
    if (data.phase === "start" || !card) {
      if (!card) {
        this.seal();
        card = new ToolCard(data);
        this.tools.set(data.toolCallId, card);
        this.el.insertBefore(card.el, this.typing);
      }
    }
    if (data.phase === "update") card.update(data.partialResult);
    else if (data.phase === "result") card.result(data);
    this.chat.stickToBottom();
  }

  finish(state, { message, errorMessage } = {}) {
    if (message) this.text(messageText(message));
    this.seal();
    this.active = false;
    this.typing.remove();
    for (const card of this.tools.values()) card.interrupt(state === "aborted" ? "stopped" : "interrupted");
    if (state === "aborted") this.el.append(h("div.run-note", null, "Stopped."));
    if (state === "error") this.el.append(h("div.run-note.error-text", null, `The run failed: ${errorMessage || "unknown error"}`));
    this.chat.runEnded(this);
  }
}

export class ChatView {
  constructor(app) {
    this.app = app;
    this.log = document.getElementById("messages");
    this.form = document.getElementById("composer");
    this.input = document.getElementById("composer-input");
    this.sendButton = document.getElementById("composer-send");
    this.stopButton = document.getElementById("composer-stop");
    this.title = document.getElementById("chat-title");
    this.keyLabel = document.getElementById("chat-key");
    this.runs = new Map();
    this.historyCards = new Map();
    this.loadToken = 0;
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.send();
    });
    this.input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.send();
      }
    });
    this.input.addEventListener("input", () => this.autosize());
    this.stopButton.addEventListener("click", () => this.stop());
    setInterval(() => {
      for (const run of this.runs.values()) for (const card of run.tools.values()) card.tick();
    }, 500);
  }

  get sessionKey() {
    return this.app.sessionKey;
  }

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  nearBottom() {
    return this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 120;
  }

  stickToBottom(force = false) {
    if (force || this._stick) this.log.scrollTop = this.log.scrollHeight;
  }

  setTitle(row) {
    const key = this.sessionKey || "";
    this.title.textContent = row ? this.app.sessionTitle(row) : key.replace(/^agent:[^:]+:/, "") || "Chat";
    this.keyLabel.textContent = key;
  }

  /** Show the transcript of the current session (replaces the log). */
  async load() {
    const token = ++this.loadToken;
    this.runs.clear();
    this.historyCards.clear();
    this.updateButtons();
    clear(this.log).append(h("div.empty.muted", null, "Loading…"));
    let history;
    try {
      history = await this.app.client.request("chat.history", { sessionKey: this.sessionKey, limit: 200 });
    } catch (err) {
      if (token !== this.loadToken) return;
      clear(this.log).append(h("div.empty.error-text", null, `Could not load the conversation: ${err.message}`));
      return;
    }
    if (token !== this.loadToken) return;
    clear(this.log);
    for (const message of history.messages || []) this.renderMessage(message);
    if (!this.log.firstChild) {
      this.log.append(h("div.empty.muted.chat-empty", null, h("strong", null, "No messages yet."),
        " Say hello, ask a question or give Homarus a task; tool calls show up here as cards."));
    }
    this._stick = true;
    this.stickToBottom(true);
  }

  renderMessage(message) {
    const role = message.role;
    if (role === "user") {
      this.log.append(this.userBubble(messageText(message)));
    } else if (role === "assistant") {
      const blocks = Array.isArray(message.content) ? message.content : [{ type: "text", text: messageText(message) }];
      let text = "";
      const flush = () => {
        if (text.trim()) {
          const b = assistantBubble();
          setBubbleText(b, text);
          this.log.append(b);
        }
        text = "";
      };
      for (const block of blocks) {
        if (block?.type === "text") text += block.text || "";
        else if (block?.type === "toolCall") {
          flush();
          const card = new ToolCard({ name: block.name, toolCallId: block.id, args: block.arguments }, 0);
          this.historyCards.set(block.id, card);
          this.log.append(card.el);
        }
      }
      flush();
      if (message.stopReason === "aborted") this.log.append(h("div.run-note", null, "Stopped."));
      else if (message.stopReason === "error" && message.errorMessage) {
        this.log.append(h("div.run-note.error-text", null, `The run failed: ${message.errorMessage}`));
      }
    } else if (role === "toolResult") {
      const card = this.historyCards.get(message.toolCallId);
      if (card) card.result({ isError: !!message.isError, result: messageText(message) }, true);
    }
  }

  userBubble(text) {
    return h("div.msg.user", null, h("div.msg-role", null, "You"), h("div.msg-text", null, text));
  }

  activeRuns() {
    return [...this.runs.values()].filter((r) => r.active);
  }

  updateButtons() {
    const busy = this.activeRuns().length > 0;
    this.stopButton.hidden = !busy;
    this.sendButton.disabled = !this.app.client?.connected;
  }

  runFor(runId, opts) {
    let run = this.runs.get(runId);
    if (!run) {
      this.log.querySelector(".chat-empty")?.remove();
      run = new RunView(this, runId, opts);
      this.runs.set(runId, run);
      this._stick = this.nearBottom() || opts?.mine;
      this.log.append(run.el);
      this.updateButtons();
    }
    return run;
  }

  runEnded(run) {
    this.updateButtons();
    if (run.mine) return;
    // a run we did not start here (another tab, the CLI, a run that outlived a reconnect): the
    // transcript has the user's message and every turn, so show that instead of the fragments
    this.app.sessions.refreshSoon();
    if (!this.activeRuns().length) setTimeout(() => { if (!this.activeRuns().length) this.load(); }, 150);
  }

  async send() {
    const text = this.input.value;
    if (!text.trim()) return;
    if (!this.app.client?.connected) {
      this.app.toast("Not connected to the gateway yet.", "error");
      return;
    }
    const runId = uuid();
    this.input.value = "";
    this.autosize();
    this.log.querySelector(".chat-empty")?.remove();
    this.log.append(this.userBubble(text));
    this._stick = true;
    const run = this.runFor(runId, { mine: true });
    this.stickToBottom(true);
    try {
      const ack = await this.app.client.request("chat.send", { sessionKey: this.sessionKey, message: text, idempotencyKey: runId });
      if (ack?.status === "ok" && ack.command) run.finish("final");
    } catch (err) {
      run.finish("error", { errorMessage: err.message });
    }
  }

  async stop() {
    const runs = this.activeRuns();
    this.stopButton.disabled = true;
    try {
      await this.app.client.request("chat.abort", { sessionKey: this.sessionKey });
    } catch (err) {
      this.app.toast(`Could not stop: ${err.message}`, "error");
    } finally {
      this.stopButton.disabled = false;
    }
    return runs;
  }

  onChat(p) {
    if (!p || p.sessionKey !== this.sessionKey) return;
    const run = this.runFor(p.runId);
    if (p.state === "delta") run.text(messageText(p.message));
    else if (["final", "aborted", "error"].includes(p.state) && run.active) run.finish(p.state, p);
  }

  onAgent(p) {
    if (!p || p.sessionKey !== this.sessionKey) return;
    if (p.stream === "tool" && p.data?.toolCallId) this.runFor(p.runId).tool(p.data);
    else if (p.stream === "lifecycle" && p.data?.phase === "start") this.runFor(p.runId);
  }

  /** The connection dropped: runs in flight may finish without us; reload when we are back. */
  onDisconnected() {
    for (const run of this.activeRuns()) {
      run.active = false;
      run.typing.remove();
      run.el.append(h("div.run-note.muted", null, "Connection lost; the reply will appear when the gateway is back."));
    }
    this.updateButtons();
  }
}
