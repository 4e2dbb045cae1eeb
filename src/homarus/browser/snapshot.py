"""A page as a model reads it: a compact outline of what is visible, each element one can act on
carrying a ref (``e12``) that the ``click``/``type``/``select``/``press``/``hover`` actions take.

Written here because the accessibility tree Playwright exposes (``aria_snapshot``) has no handles
back to elements. The script walks the DOM once, keeps visible headings, text blocks, links,
buttons and form fields, and marks each actionable element with ``data-homarus-ref``; an element
keeps its ref across snapshots as long as it stays in the page, and the numbering of a tab goes on
across pages, so a ref the model got earlier still means the same element or none at all.
"""

from __future__ import annotations

from typing import Final

__all__ = ["REF_ATTR", "SNAPSHOT_JS", "ref_selector", "valid_ref"]

REF_ATTR: Final = "data-homarus-ref"

SNAPSHOT_JS: Final = r"""
({ maxChars, start }) => {
  const ATTR = "data-homarus-ref";
  const w = window;
  // numbering goes on from the tab's last snapshot (any page): a ref never names two elements
  if (!w.__homarusRefSeq || w.__homarusRefSeq < start) w.__homarusRefSeq = start;
  const out = [];
  let size = 0;
  let cut = false;
  const push = (line) => {
    if (cut) return;
    if (size + line.length + 1 > maxChars) { cut = true; return; }
    out.push(line); size += line.length + 1;
  };
  const visible = (el) => {
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.display === "none") return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 || r.height > 0;
  };
  const text = (s, n = 160) => {
    const t = (s || "").replace(/\s+/g, " ").trim();
    return t.length > n ? t.slice(0, n - 1) + "…" : t;
  };
  const name = (el) => text(el.getAttribute("aria-label") || el.getAttribute("alt") || el.getAttribute("title")
    || (el.labels && el.labels[0] && el.labels[0].innerText) || el.getAttribute("placeholder")
    || el.innerText || el.value || "");
  const refOf = (el) => {
    let ref = el.getAttribute(ATTR);
    if (!ref) { ref = "e" + (++w.__homarusRefSeq); el.setAttribute(ATTR, ref); }
    return ref;
  };
  const roleOf = (el) => {
    const role = el.getAttribute("role");
    if (role) return role;
    const tag = el.tagName.toLowerCase();
    if (tag === "a" && el.hasAttribute("href")) return "link";
    if (tag === "button" || (tag === "input" && ["button", "submit", "reset"].includes(el.type))) return "button";
    if (tag === "input" && el.type === "checkbox") return "checkbox";
    if (tag === "input" && el.type === "radio") return "radio";
    if (tag === "input" || tag === "textarea") return "textbox";
    if (tag === "select") return "combobox";
    if (el.isContentEditable) return "textbox";
    return null;
  };
  const ACTIONABLE = new Set(["link", "button", "checkbox", "radio", "textbox", "combobox", "menuitem", "tab",
    "switch", "option", "searchbox", "slider"]);
  const walk = (node, depth) => {
    if (cut || node.nodeType !== 1) return;
    const el = node;
    const tag = el.tagName.toLowerCase();
    if (["script", "style", "noscript", "template", "svg", "head"].includes(tag)) return;
    if (!visible(el)) return;
    const indent = "  ".repeat(Math.min(depth, 8));
    const role = roleOf(el);
    if (role && ACTIONABLE.has(role)) {
      let line = `${indent}- ${role} "${name(el)}" [ref=${refOf(el)}]`;
      if (role === "link") line += ` -> ${text(el.getAttribute("href"), 200)}`;
      if (role === "textbox" && el.value) line += ` value="${text(el.value, 80)}"`;
      if ((role === "checkbox" || role === "radio") && el.checked) line += " [checked]";
      if (el.disabled) line += " [disabled]";
      if (role === "combobox" && el.options) {
        const options = [...el.options].slice(0, 20).map((o) => JSON.stringify(text(o.text, 40)));
        line += ` options=[${options.join(", ")}]`;
      }
      push(line);
      return;
    }
    if (/^h[1-6]$/.test(tag)) { push(`${indent}- heading "${text(el.innerText)}" [level=${tag[1]}]`); return; }
    if (["p", "li", "td", "th", "label", "pre", "blockquote", "figcaption", "dt", "dd"].includes(tag)) {
      const hasActionable = el.querySelector("a[href], button, input, select, textarea, [role]");
      if (!hasActionable) { const t = text(el.innerText, 400); if (t) push(`${indent}- text: ${t}`); return; }
    }
    for (const child of el.children) walk(child, depth + (role ? 1 : 0));
  };
  walk(document.body || document.documentElement, 0);
  return { title: document.title, url: location.href, lines: out, truncated: cut, seq: w.__homarusRefSeq };
}
"""


def valid_ref(ref: str) -> bool:
    return len(ref) <= 12 and ref.startswith("e") and ref[1:].isdigit()


def ref_selector(ref: str) -> str:
    return f'[{REF_ATTR}="{ref}"]'
