// The status page: health, version, model, uptime, connections, plugins and their diagnostics,
// MCP servers, cron jobs, and what the model calls cost (usage.cost, the last 30 days). Methods this gateway does not have (or this token may not call) show as "not
// available" instead of failing the page.

import { card, clear, duration, h, relTime, table } from "./dom.js";

export function unavailable(err) {
  if (/unknown method/i.test(err.message)) return "Not available on this gateway.";
  if (/missing scope/i.test(err.message)) return `Not available with this token (${err.message}).`;
  return `Could not load: ${err.message}`;
}

function kv(rows) {
  return h("dl.kv", null, rows.filter(([, v]) => v !== undefined && v !== null && v !== "").map(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
}

function modelName(config) {
  const model = config?.agents?.defaults?.model;
  if (!model) return undefined;
  if (typeof model === "string") return model;
  const fallbacks = Array.isArray(model.fallbacks) && model.fallbacks.length ? ` (fallbacks: ${model.fallbacks.join(", ")})` : "";
  return model.primary ? model.primary + fallbacks : undefined;
}

function schedule(s) {
  if (!s) return "";
  if (s.kind === "every") return `every ${duration(s.everyMs)}`;
  if (s.kind === "at") return `at ${new Date(typeof s.at === "number" ? s.at : s.at).toLocaleString()}`;
  if (s.kind === "cron") return `cron ${s.expr}${s.tz ? ` (${s.tz})` : ""}`;
  return JSON.stringify(s);
}

function when(ms) {
  if (!ms) return "—";
  const d = new Date(ms);
  return ms > Date.now() ? `${d.toLocaleString()}` : `${relTime(ms)}`;
}

export class StatusView {
  constructor(app) {
    this.app = app;
    this.grid = document.getElementById("status-grid");
    this.uptimeBase = null;
    document.getElementById("status-refresh").addEventListener("click", () => this.refresh());
    setInterval(() => this.tickUptime(), 1000);
  }

  async call(method, params = {}) {
    try {
      return { ok: true, value: await this.app.client.request(method, params) };
    } catch (err) {
      return { ok: false, error: err };
    }
  }

  tickUptime() {
    const el = this.grid.querySelector("[data-uptime]");
    if (el && this.uptimeBase) el.textContent = duration(this.uptimeBase.ms + (Date.now() - this.uptimeBase.at));
  }

  async refresh() {
    if (!this.app.client?.connected) return;
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const [health, status, config, plugins, cron, mcp, usage] = await Promise.all([
      this.call("health", { probe: true }),
      this.call("status", {}),
      this.call("config.get", {}),
      this.call("plugins.list", {}),
      this.call("cron.list", { includeDisabled: true, limit: 50 }),
      this.call("mcp.status", {}),
      this.call("usage.cost", { days: 30, agentScope: "all", ...(zone ? { mode: "specific", timeZone: zone } : {}) }),
    ]);
    clear(this.grid);
    this.grid.append(this.gatewayCard(health, status, config));
    this.grid.append(this.healthCard(health));
    this.grid.append(this.pluginsCard(plugins));
    this.grid.append(this.mcpCard(mcp));
    this.grid.append(this.cronCard(cron));
    this.grid.append(this.usageCard(usage));
    this.tickUptime();
  }

  gatewayCard(health, status, config) {
    const hello = this.app.client.hello || {};
    const s = status.ok ? status.value : {};
    const gw = s.gateway || {};
    const uptime = h("span", { "data-uptime": "" });
    if (s.uptimeMs !== undefined) this.uptimeBase = { ms: s.uptimeMs, at: Date.now() };
    else this.uptimeBase = null;
    const model = config.ok ? modelName(config.value?.config) : undefined;
    return card("Gateway",
      status.ok ? null : h("p.error-text", null, unavailable(status.error)),
      kv([
        ["Version", s.runtimeVersion || hello.server?.version],
        ["Uptime", s.uptimeMs !== undefined ? uptime : undefined],
        ["Model", model || (config.ok ? "not configured (echo)" : "— (needs operator.admin)")],
        ["Protocol", hello.protocol],
        ["Connections", s.connections ? `${s.connections.count} (${s.connections.presence} in presence)` : undefined],
        ["Sessions", s.sessions?.count],
        ["Listening", gw.bind ? `${gw.bind}:${gw.port ?? location.port}` : undefined],
        ["Auth mode", gw.authMode],
        ["Process", gw.pid ? `pid ${gw.pid}, Python ${gw.python}` : undefined],
        ["State directory", gw.stateDir],
        ["Event seq", s.events?.seq],
      ]));
  }

  healthCard(health) {
    if (!health.ok) return card("Health", h("p.error-text", null, unavailable(health.error)));
    const v = health.value;
    const count = (a) => a.sessions?.count ?? 0;
    const agents = (v.agents || []).map((a) => [a.agentId + (a.isDefault ? " (default)" : ""), String(count(a))]);
    return card("Health",
      h("p", null, h("span", { class: v.ok ? "pill ok" : "pill bad" }, v.ok ? "healthy" : "unhealthy"),
        h("span.muted.small", null, ` checked ${relTime(v.ts)}, ${v.durationMs ?? "?"} ms`)),
      agents.length ? table(["Agent", "Sessions"], agents) : null);
  }

  pluginsCard(plugins) {
    if (!plugins.ok) return card("Plugins", h("p.muted", null, unavailable(plugins.error)));
    const list = plugins.value?.plugins || [];
    const diags = plugins.value?.diagnostics || [];
    return card("Plugins",
      list.length
        ? table(["Plugin", "Version", "Origin", "Status"], list.map((p) => [
          h("span", { title: p.description || "" }, p.name || p.id),
          p.version || "—",
          p.origin || "",
          h("span", { class: `pill ${p.status === "loaded" || p.status === "enabled" ? "ok" : p.status === "error" ? "bad" : ""}` },
            p.status + (p.reason ? `: ${p.reason}` : "")),
        ]))
        : h("p.muted", null, "No plugins."),
      diags.length
        ? h("div", null, h("h4", null, "Diagnostics"), h("ul.diagnostics", null, diags.map((d) =>
          h("li", { class: `diag ${d.level}` }, h("span.pill", { class: d.level === "error" ? "bad" : "warn" }, d.level),
            " ", d.pluginId ? h("strong", null, `[${d.pluginId}] `) : null, d.message))))
        : null);
  }

  mcpCard(mcp) {
    if (!mcp.ok) return card("MCP servers", h("p.muted", null, unavailable(mcp.error)));
    const servers = mcp.value?.servers || [];
    if (!servers.length) return card("MCP servers", h("p.muted", null, "No MCP servers configured (mcp.servers)."));
    const tone = { ready: "ok", failed: "bad" };
    return card("MCP servers", table(["Server", "Transport", "State", "Tools", "Last error"], servers.map((s) => [
      h("span", { title: `started ${s.startedAt ? relTime(s.startedAt) : "never"}, ${s.restarts} restart(s)` }, s.name),
      s.transport,
      h("span", { class: `pill ${tone[s.state] || ""}` }, s.state),
      h("span", { title: (s.tools || []).join("\n") }, String((s.tools || []).length),
        (s.refused || []).length ? ` (${s.refused.length} refused)` : ""),
      s.lastError ? h("span.error-text", null, s.lastError) : "—",
    ])));
  }

  cronCard(cron) {
    if (!cron.ok) return card("Cron jobs", h("p.muted", null, unavailable(cron.error)));
    const jobs = cron.value?.jobs || [];
    if (!jobs.length) return card("Cron jobs", h("p.muted", null, "No scheduled jobs."));
    return card("Cron jobs", table(["Job", "Schedule", "Next run", "Last run"], jobs.map((j) => [
      h("span", { class: j.enabled === false ? "muted" : "" }, j.name || j.id, j.enabled === false ? " (disabled)" : ""),
      schedule(j.schedule),
      when(j.state?.nextRunAtMs),
      j.state?.lastRunAtMs ? `${relTime(j.state.lastRunAtMs)} · ${j.state.lastStatus || j.state.lastRunStatus || "?"}${j.state.lastError ? `: ${j.state.lastError}` : ""}` : "never",
    ])));
  }

  usageCard(usage) {
    if (!usage.ok) return card("Usage (30 days)", h("p.muted", null, unavailable(usage.error)));
    const u = usage.value;
    const t = u.totals || {};
    const tokens = (n) => (n || 0).toLocaleString();
    const money = (v) => `$${(v || 0).toFixed(v > 0 && v < 0.01 ? 4 : 2)}`;
    if (!t.totalTokens) return card("Usage (30 days)", h("p.muted", null, "No model calls in the last 30 days."));
    const lastDays = (u.daily || []).slice(-7).reverse();
    return card("Usage (30 days)",
      kv([
        ["Cost", money(t.totalCost)],
        ["Tokens", `${tokens(t.input)} in · ${tokens(t.output)} out · ${tokens(t.cacheRead)} cache read`],
        ["Unpriced calls", t.missingCostEntries ? `${t.missingCostEntries} (no cost set for the model in models.providers)` : undefined],
      ]),
      table(["Model", "Calls", "Tokens", "Cost"], (u.byModel || []).map((m) => [
        `${m.provider}/${m.model}`, tokens(m.count), tokens(m.totals.totalTokens), money(m.totals.totalCost),
      ])),
      table(["Day", "Tokens", "Cost"], lastDays.map((d) => [d.date, tokens(d.totalTokens), money(d.totalCost)])));
  }
}
