// A small Markdown renderer for assistant text.
//
// The input is untrusted (model output can quote anything, including hostile HTML), so nothing is
// ever parsed as markup: blocks and inline spans are recognised with regular expressions and then
// built as DOM nodes whose text goes in through text nodes. Raw HTML in the source therefore shows
// up literally. Links are kept only for http(s) URLs and open in a new tab without an opener.
// Images are rendered as links (loading them would let a reply make requests on its own).
//
// Supported: paragraphs (single newlines kept), ATX headings, fenced code blocks (an unclosed
// fence, common mid-stream, still renders as code), block quotes, bullet and numbered lists,
// GFM tables, rules, inline code, **bold**, *italic*, ~~strike~~, [links](https://…), bare URLs.

import { h } from "./dom.js";

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

const MAX_INPUT = 200_000; // beyond this, render the rest as plain text: regexes stay linear and fast

/** Render Markdown source to a DocumentFragment of inert nodes. */
export function renderMarkdown(source) {
  const frag = document.createDocumentFragment();
  let text = String(source ?? "");
  let tail = "";
  if (text.length > MAX_INPUT) {
    tail = text.slice(MAX_INPUT);
    text = text.slice(0, MAX_INPUT);
  }
  renderBlocks(text.replace(/\r\n?/g, "\n").split("\n"), frag, 0);
  if (tail) frag.append(h("pre.md-overflow", null, tail));
  return frag;
}

function isBlockStart(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    BULLET.test(line) || ORDERED.test(line);
}

function renderBlocks(lines, parent, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const lang = m[2];
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
      i += 1; // the closing fence (or past the end)
      parent.append(codeBlock(body.join("\n"), lang));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      parent.append(inline(h(`h${Math.min(6, m[1].length + 2)}.md-h`), m[2]));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      parent.append(h("hr"));
      i += 1;
      continue;
    }
    if (QUOTE.test(line) && depth < 8) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        inner.push(m[1]);
        i += 1;
      }
      const quote = h("blockquote");
      renderBlocks(inner, quote, depth + 1);
      parent.append(quote);
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      i = list(lines, i, parent, depth);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      i = table(lines, i, parent);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !(para.length && isBlockStart(lines[i]))) {
      para.push(lines[i]);
      i += 1;
    }
    const p = h("p");
    para.forEach((l, n) => {
      if (n) p.append(h("br"));
      inline(p, l);
    });
    parent.append(p);
  }
}

function list(lines, i, parent, depth) {
  const ordered = ORDERED.test(lines[i]);
  const el = h(ordered ? "ol" : "ul");
  if (ordered) {
    const start = Number(ORDERED.exec(lines[i])[2]);
    if (start !== 1) el.setAttribute("start", String(start));
  }
  const baseIndent = (ordered ? ORDERED : BULLET).exec(lines[i])[1].length;
  let item = null;
  while (i < lines.length) {
    const line = lines[i];
    const m = (ordered ? ORDERED : BULLET).exec(line);
    if (m && m[1].length <= baseIndent + 1) {
      item = { lines: [ordered ? m[3] : m[2]] };
      el.append((item.el = h("li")));
      item.el._md = item;
      i += 1;
    } else if (item && line.trim() && (/^\s{2,}/.test(line) || !isBlockStart(line))) {
      item.lines.push(line.replace(/^\s{2,4}/, ""));
      i += 1;
    } else if (item && !line.trim() && i + 1 < lines.length && /^\s{2,}\S/.test(lines[i + 1])) {
      item.lines.push("");
      i += 1;
    } else {
      break;
    }
  }
  for (const li of el.children) {
    const md = li._md;
    delete li._md;
    if (md.lines.length === 1 || depth >= 6) inline(li, md.lines.join(" "));
    else renderBlocks(md.lines, li, depth + 1);
  }
  parent.append(el);
  return i;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(lines, i, parent) {
  const head = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : "");
  const thead = h("thead", null, h("tr", null, head.map((c, n) => cell("th", c, aligns[n]))));
  const tbody = h("tbody");
  i += 2;
  while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
    const row = splitRow(lines[i]);
    tbody.append(h("tr", null, head.map((_, n) => cell("td", row[n] ?? "", aligns[n]))));
    i += 1;
  }
  parent.append(h("div.md-table", null, h("table", null, thead, tbody)));
  return i;
}

function cell(tag, text, align) {
  const el = h(tag, align ? { class: `align-${align}` } : null);
  return inline(el, text);
}

function codeBlock(code, lang) {
  const copy = h("button.code-copy", { type: "button", title: "Copy code" }, "Copy");
  copy.addEventListener("click", () => {
    navigator.clipboard?.writeText(code).then(
      () => { copy.textContent = "Copied"; setTimeout(() => (copy.textContent = "Copy"), 1200); },
      () => { copy.textContent = "Copy failed"; },
    );
  });
  return h("div.code", null,
    h("div.code-head", null, h("span.code-lang", null, lang || "text"), copy),
    h("pre", null, h("code", lang ? { "data-lang": lang } : null, code)));
}

// Inline spans, first match wins at each position: code, image, link, autolink, bold, strike, italic.
const INLINE = new RegExp(
  [
    "(?<code>`+)(?<codeText>[\\s\\S]*?[^`])\\k<code>(?!`)",
    "!\\[(?<imgAlt>[^\\]\\n]*)\\]\\((?<imgUrl>[^)\\s]+)(?:\\s+\"[^\"\\n]*\")?\\)",
    "\\[(?<linkText>[^\\]\\n]+)\\]\\((?<linkUrl>[^)\\s]+)(?:\\s+\"[^\"\\n]*\")?\\)",
    "<?(?<auto>https?:\\/\\/[^\\s<>\"'`]+)",
    "\\*\\*(?<bold>[^\\s*](?:[\\s\\S]*?[^\\s*])?)\\*\\*",
    "__(?<bold2>[^\\s_](?:[\\s\\S]*?[^\\s_])?)__(?!\\w)",
    "~~(?<strike>[^\\s~](?:[\\s\\S]*?[^\\s~])?)~~",
    "\\*(?<em>[^\\s*](?:[^*]*?[^\\s*])?)\\*",
    "(?<![\\w])_(?<em2>[^\\s_](?:[^_]*?[^\\s_])?)_(?![\\w])",
  ].join("|"),
  "g",
);

/** Append the inline rendering of `text` to `el`; returns `el`. */
export function inline(el, text, depth = 0) {
  const s = String(text);
  if (depth > 6) {
    el.append(s);
    return el;
  }
  INLINE.lastIndex = 0;
  const re = new RegExp(INLINE.source, "g");
  let last = 0;
  let m;
  while ((m = re.exec(s))) {
    const g = m.groups;
    let node = null;
    let consumed = m[0];
    if (g.code !== undefined) {
      node = h("code.inline", null, g.codeText.replace(/^ (.*) $/, "$1"));
    } else if (g.imgUrl !== undefined) {
      node = link(g.imgUrl, `🖼 ${g.imgAlt || g.imgUrl}`, depth, true);
    } else if (g.linkUrl !== undefined) {
      node = link(g.linkUrl, g.linkText, depth, false);
    } else if (g.auto !== undefined) {
      let url = g.auto;
      const trail = /[.,;:!?)\]>]+$/.exec(url);
      if (trail) url = url.slice(0, -trail[0].length);
      consumed = m[0].slice(0, m[0].length - (g.auto.length - url.length));
      if (consumed.startsWith("<") && s[m.index + consumed.length] === ">") consumed += ">";
      node = link(url, url, depth, true);
    } else if (g.bold !== undefined || g.bold2 !== undefined) {
      node = inline(h("strong"), g.bold ?? g.bold2, depth + 1);
    } else if (g.strike !== undefined) {
      node = inline(h("del"), g.strike, depth + 1);
    } else {
      node = inline(h("em"), g.em ?? g.em2, depth + 1);
    }
    if (m.index > last) el.append(s.slice(last, m.index));
    el.append(node);
    last = m.index + consumed.length;
    re.lastIndex = last;
  }
  if (last < s.length) el.append(s.slice(last));
  return el;
}

/** http(s) URLs become links; anything else (javascript:, data:, relative) stays plain text. */
export function safeUrl(raw) {
  try {
    const url = new URL(raw);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

function link(rawUrl, label, depth, plainLabel) {
  const href = safeUrl(rawUrl);
  if (!href) return document.createTextNode(plainLabel ? label : `[${label}](${rawUrl})`);
  const a = h("a", { href, target: "_blank", rel: "noopener noreferrer nofollow", title: href });
  return plainLabel ? (a.append(label), a) : inline(a, label, depth + 1);
}
