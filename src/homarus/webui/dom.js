// Tiny DOM helpers. Everything the UI shows is built with createElement + text nodes: no code path
// turns a string into markup, so model output, tool results and session labels render inert.

/**
 * h("div.card", {title: "x", onclick: fn}, child, "text", [more]) → HTMLElement.
 * Attributes starting with "on" become listeners; strings and numbers become text nodes.
 */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name || "div");
  if (classes.length) el.className = classes.join(" ");
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on") && typeof value === "function") {
        el.addEventListener(key.slice(2), value);
      } else if (key === "class") {
        el.className = [el.className, value].filter(Boolean).join(" ");
      } else if (key === "dataset") {
        Object.assign(el.dataset, value);
      } else if (key === "value") {
        el.value = value;
      } else {
        el.setAttribute(key, value === true ? "" : String(value));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function relTime(ms) {
  if (!ms) return "";
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

export function duration(ms) {
  if (ms === undefined || ms === null) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60000);
  if (m < 60) return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** A v4 UUID that also works outside secure contexts (crypto.randomUUID needs https/localhost). */
export function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Text of a transcript/chat message: a string, or the text blocks of a content array. */
export function messageText(message) {
  if (!message) return "";
  const content = message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return typeof message.text === "string" ? message.text : "";
  return content
    .filter((b) => b && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text)
    .join("");
}

/** A status-page card: a titled section (``data-card`` is the title, lower-cased). */
export function card(title, ...body) {
  return h("section.card", { "data-card": title.toLowerCase() }, h("h3", null, title), ...body);
}

/** A data table; cells are nodes or text. */
export function table(headers, rows, rowAttrs = () => null) {
  return h("div.table-wrap", null, h("table.data", null,
    h("thead", null, h("tr", null, headers.map((x) => h("th", null, x)))),
    h("tbody", null, rows.map((r, i) => h("tr", rowAttrs(i), r.map((c) => h("td", null, c)))))));
}
