/* A tiny, safe markdown subset for assistant text.
 *
 * Every piece of text becomes a DOM text node (textContent / createTextNode): nothing the model
 * writes is ever parsed as HTML. Supported: paragraphs, line breaks, ``` fenced code ```, `code`,
 * **bold**, *italic* / _italic_, # headings, - / * / 1. lists, > quotes, and [links](https://…)
 * with http, https and mailto targets only (opened with rel="noopener noreferrer").
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
      var pre = el("pre"), c = el("code");
      if (fence[2]) c.setAttribute("data-lang", fence[2]);
      c.textContent = code.join("\n");
      pre.appendChild(c);
      out.appendChild(pre);
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
