/* A tiny, safe markdown subset for assistant text.
 *
 * Every piece of text becomes a DOM text node (textContent / createTextNode): nothing the model
 * writes is ever parsed as HTML. Supported: paragraphs, line breaks, ``` fenced code ```, `code`,
 * **bold**, *italic* / _italic_, # headings, - / * / 1. lists, > quotes, | tables | (GitHub's:
 * a header row, a |---|:---:| row, then rows), and [links](https://…) with http, https and mailto
 * targets only (opened with rel="noopener noreferrer"). A fenced block shows its language (or
 * "code") and a Copy button.
 *
 * An ES module (render.js uses it); module code is strict by itself.
 */
var SAFE_URL = /^(https?:\/\/|mailto:)[^\s]+$/i;

function el(tag, cls) {
  var node = document.createElement(tag);
  if (cls) node.className = cls;
  return node;
}

// inline: code spans first (their content is literal), then links, bold, italic
var INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)|\*\*([^*\n]+?)\*\*|__([^_\n]+?)__|\*([^*\s][^*\n]*?)\*|(^|[^\w])_([^_\s][^_\n]*?)_(?!\w)/g;

function inline(parent, text) {
  var last = 0, m;
  var re = new RegExp(INLINE.source, "g"); // one per call: inline() recurses into bold and links
  while ((m = re.exec(text)) !== null) {
    var start = m.index;
    if (m[8] !== undefined) start += m[8].length; // the character before _italic_ stays text
    if (start > last) parent.appendChild(document.createTextNode(text.slice(last, start)));
    var node;
    if (m[1] !== undefined) {
      node = el("code");
      node.textContent = m[2];
    } else if (m[3] !== undefined) {
      if (SAFE_URL.test(m[4])) {
        node = el("a");
        node.href = m[4];
        node.rel = "noopener noreferrer";
        node.target = "_blank";
        inline(node, m[3]);
      } else {
        node = document.createTextNode(m[0]);
      }
    } else if (m[5] !== undefined || m[6] !== undefined) {
      node = el("strong");
      inline(node, m[5] !== undefined ? m[5] : m[6]);
    } else {
      node = el("em");
      inline(node, m[7] !== undefined ? m[7] : m[9]);
    }
    parent.appendChild(node);
    last = re.lastIndex;
  }
  if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
}

/* Copies ``text`` to the clipboard and says so on ``button`` for a moment ("Copied", or "Copy
 * failed" where the page may not write the clipboard). */
export function copyText(text, button) {
  var label = button.textContent, name = button.getAttribute("aria-label");
  function say(word) {
    button.textContent = word;
    if (name) button.setAttribute("aria-label", word);
    button.setAttribute("data-copied", word === "Copied" ? "true" : "false");
    setTimeout(function () {
      button.textContent = label;
      if (name) button.setAttribute("aria-label", name);
      button.removeAttribute("data-copied");
    }, 1500);
  }
  var clip = navigator.clipboard;
  if (!clip || !clip.writeText) { say("Copy failed"); return Promise.resolve(false); }
  return clip.writeText(text).then(function () { say("Copied"); return true; },
    function () { say("Copy failed"); return false; });
}

function codeBlock(lang, text) {
  var wrap = el("div", "code-block");
  var head = el("div", "code-head");
  var name = el("span", "code-lang");
  name.textContent = lang || "code";
  var copy = el("button", "copy-code");
  copy.type = "button";
  copy.textContent = "Copy";
  copy.setAttribute("aria-label", "Copy the " + (lang ? lang + " " : "") + "code");
  var pre = el("pre"), c = el("code");
  if (lang) c.setAttribute("data-lang", lang);
  c.textContent = text;
  copy.addEventListener("click", function () { copyText(text, copy); });
  head.appendChild(name);
  head.appendChild(copy);
  pre.appendChild(c);
  wrap.appendChild(head);
  wrap.appendChild(pre);
  return wrap;
}

// -- tables: | a | b | / |---|:--:| / rows --------------------------------------------------------
var TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/* The cells of a table row: split on pipes that are not escaped (\|), outer pipes dropped. */
function cells(line) {
  var text = line.trim();
  if (text.charAt(0) === "|") text = text.slice(1);
  if (text.length && text.charAt(text.length - 1) === "|" && text.charAt(text.length - 2) !== "\\") text = text.slice(0, -1);
  var out = [], cell = "";
  for (var i = 0; i < text.length; i += 1) {
    var ch = text.charAt(i);
    if (ch === "\\" && text.charAt(i + 1) === "|") { cell += "|"; i += 1; }
    else if (ch === "|") { out.push(cell.trim()); cell = ""; }
    else cell += ch;
  }
  out.push(cell.trim());
  return out;
}

function isTableStart(lines, i) {
  return lines[i].indexOf("|") >= 0 && i + 1 < lines.length && lines[i + 1].indexOf("-") >= 0 &&
    TABLE_RULE.test(lines[i + 1]) && (lines[i + 1].indexOf("|") >= 0 || cells(lines[i]).length > 1);
}

function table(lines, i, out) {
  var head = cells(lines[i]);
  var aligns = cells(lines[i + 1]).map(function (c) {
    var left = c.charAt(0) === ":", right = c.charAt(c.length - 1) === ":";
    return left && right ? "center" : right ? "right" : left ? "left" : "";
  });
  var wrap = el("div", "table-wrap");
  var t = el("table"), thead = el("thead"), tbody = el("tbody");
  function row(values, tag, parent) {
    var tr = el("tr");
    head.forEach(function (_, n) {
      var cell = el(tag);
      if (tag === "th") cell.setAttribute("scope", "col");
      if (aligns[n]) cell.style.textAlign = aligns[n];
      inline(cell, values[n] || "");
      tr.appendChild(cell);
    });
    parent.appendChild(tr);
  }
  row(head, "th", thead);
  i += 2;
  while (i < lines.length && lines[i].trim() !== "" && lines[i].indexOf("|") >= 0) {
    row(cells(lines[i]), "td", tbody);
    i += 1;
  }
  t.appendChild(thead);
  t.appendChild(tbody);
  wrap.appendChild(t);
  out.appendChild(wrap);
  return i;
}

function paragraph(parent, lines) {
  var p = el("p");
  lines.forEach(function (line, i) {
    if (i > 0) p.appendChild(el("br"));
    inline(p, line);
  });
  parent.appendChild(p);
}

/* render(text) -> a DocumentFragment */
export function render(text) {
  var out = document.createDocumentFragment();
  var lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  var i = 0, para = [];
  function flush() {
    if (para.length) paragraph(out, para);
    para = [];
  }
  while (i < lines.length) {
    var line = lines[i];
    var fence = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(line);
    if (fence) {
      flush();
      var code = [];
      i += 1;
      while (i < lines.length && lines[i].trim() !== fence[1]) { code.push(lines[i]); i += 1; }
      i += 1;
      out.appendChild(codeBlock(fence[2], code.join("\n")));
      continue;
    }
    if (isTableStart(lines, i)) {
      flush();
      i = table(lines, i, out);
      continue;
    }
    var heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      var h = el("h" + Math.min(6, heading[1].length + 2));
      inline(h, heading[2]);
      out.appendChild(h);
      i += 1;
      continue;
    }
    var bullet = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line);
    if (bullet) {
      flush();
      var ordered = /\d/.test(bullet[1]);
      var list = el(ordered ? "ol" : "ul");
      while (i < lines.length) {
        var item = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(lines[i]);
        if (!item || /\d/.test(item[1]) !== ordered) break;
        var li = el("li");
        inline(li, item[2]);
        list.appendChild(li);
        i += 1;
      }
      out.appendChild(list);
      continue;
    }
    if (/^\s*>\s?/.test(line)) {
      flush();
      var quoted = [];
      while (i < lines.length && /^\s*>\s?/.test(lines[i])) { quoted.push(lines[i].replace(/^\s*>\s?/, "")); i += 1; }
      var bq = el("blockquote");
      paragraph(bq, quoted);
      out.appendChild(bq);
      continue;
    }
    if (line.trim() === "") { flush(); i += 1; continue; }
    para.push(line);
    i += 1;
  }
  flush();
  return out;
}
