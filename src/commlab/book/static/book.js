/* commlab's static edition: the contents toggle on small screens, and the offline search.
 *
 * The index is window.COMMLAB_SEARCH, written by commlab.book.search when the book is built:
 *   pages:    [[href from the book's root, title], ...]
 *   sections: [[page, anchor, heading, text], ...]
 *   terms:    {word: [section, weight, section, weight, ...], ...}
 * A query is split into words as commlab.book.search.terms() splits the pages (a compound such as
 * all-reduce or all_reduce is one word without its separators); a section must hold every word, whole or as
 * the start of a longer word (a whole word counts double), and sections are ranked by their summed weights.
 * Nothing is fetched: the index comes with a <script> tag, which works from file:// as well.
 */
(function () {
  "use strict";
  var WORD = /[\p{L}\p{N}]+(?:[_.\-][\p{L}\p{N}]+)*/gu;
  var MAX_RESULTS = 20;
  var root = document.body.getAttribute("data-commlab-root") || "";
  var sortedWords = null;
  document.documentElement.classList.add("commlab-js");

  var menu = document.querySelector(".commlab-menu");
  if (menu) {
    menu.addEventListener("click", function () {
      var open = document.body.classList.toggle("commlab-nav-open");
      menu.setAttribute("aria-expanded", String(open));
    });
  }

  function queryWords(text) {
    var found = [];
    (text.toLowerCase().match(WORD) || []).forEach(function (word) {
      var joined = word.split(/[_.\-]/).join("");
      if (joined.length > 1 && found.indexOf(joined) < 0) found.push(joined);
    });
    return found;
  }

  function firstAtLeast(words, target) {
    var lo = 0, hi = words.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (words[mid] < target) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function sectionsWith(index, word) {
    if (sortedWords === null) sortedWords = Object.keys(index.terms).sort();
    var best = new Map();
    for (var i = firstAtLeast(sortedWords, word); i < sortedWords.length; i++) {
      var candidate = sortedWords[i];
      if (candidate.lastIndexOf(word, 0) !== 0) break;
      var postings = index.terms[candidate], factor = candidate === word ? 2 : 1;
      for (var j = 0; j < postings.length; j += 2) {
        var weight = postings[j + 1] * factor;
        if ((best.get(postings[j]) || 0) < weight) best.set(postings[j], weight);
      }
    }
    return best;
  }

  function search(index, words) {
    var scores = null;
    words.forEach(function (word) {
      if (scores !== null && scores.size === 0) return;
      var found = sectionsWith(index, word);
      if (scores === null) { scores = found; return; }
      var both = new Map();
      scores.forEach(function (score, section) {
        if (found.has(section)) both.set(section, score + found.get(section));
      });
      scores = both;
    });
    return Array.from(scores || []).sort(function (a, b) { return b[1] - a[1] || a[0] - b[0]; })
      .slice(0, MAX_RESULTS).map(function (pair) { return pair[0]; });
  }

  function escapeHtml(text) {
    return text.replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"}[c];
    });
  }

  function snippet(text, words) {
    var lower = text.toLowerCase(), at = -1;
    words.forEach(function (word) {
      var i = lower.indexOf(word);
      if (i >= 0 && (at < 0 || i < at)) at = i;
    });
    var start = Math.max(0, at - 60), piece = text.slice(start, start + 200), lowerPiece = piece.toLowerCase();
    var marks = [];
    words.forEach(function (word) {
      for (var i = lowerPiece.indexOf(word); i >= 0; i = lowerPiece.indexOf(word, i + word.length)) {
        marks.push([i, i + word.length]);
      }
    });
    marks.sort(function (a, b) { return a[0] - b[0]; });
    var out = start > 0 ? "&hellip; " : "", done = 0;
    marks.forEach(function (mark) {
      if (mark[0] < done) return;
      out += escapeHtml(piece.slice(done, mark[0])) + "<mark>" + escapeHtml(piece.slice(mark[0], mark[1])) + "</mark>";
      done = mark[1];
    });
    out += escapeHtml(piece.slice(done));
    return out + (start + 200 < text.length ? " &hellip;" : "");
  }

  function resultHtml(index, sectionNumber, words) {
    var section = index.sections[sectionNumber], page = index.pages[section[0]];
    var href = root + page[0] + (section[1] ? "#" + encodeURIComponent(section[1]) : "");
    var heading = section[2] && section[2] !== page[1] ? "<span class=\"commlab-search-section\">" +
      escapeHtml(section[2]) + "</span>" : "";
    return "<li><a href=\"" + escapeHtml(href) + "\"><span class=\"commlab-search-page\">" + escapeHtml(page[1]) +
      "</span>" + heading + "<span class=\"commlab-search-snippet\">" + snippet(section[3], words) + "</span></a></li>";
  }

  var input = document.getElementById("commlab-search-input");
  var panel = document.getElementById("commlab-search-results");
  if (!input || !panel) return;

  function show(query) {
    var index = window.COMMLAB_SEARCH, words = queryWords(query);
    if (!words.length) { panel.hidden = true; panel.innerHTML = ""; return; }
    panel.hidden = false;
    if (!index) {
      panel.innerHTML = "<p class=\"commlab-search-empty\">The search index (_static/search-index.js) did not load.</p>";
      return;
    }
    var found = search(index, words);
    panel.innerHTML = found.length
      ? "<p class=\"commlab-search-count\">" + found.length + (found.length === MAX_RESULTS ? "+" : "") +
        " section" + (found.length === 1 ? "" : "s") + "</p><ol>" +
        found.map(function (s) { return resultHtml(index, s, words); }).join("") + "</ol>"
      : "<p class=\"commlab-search-empty\">No section holds every word of \u201c" + escapeHtml(query.trim()) +
        "\u201d.</p>";
  }

  function links() { return Array.prototype.slice.call(panel.querySelectorAll("a")); }

  input.addEventListener("input", function () { show(input.value); });
  input.addEventListener("keydown", function (event) {
    var first = links()[0];
    if (event.key === "Enter" && first) { window.location.href = first.href; }
    else if (event.key === "ArrowDown" && first) { event.preventDefault(); first.focus(); }
    else if (event.key === "Escape") { input.value = ""; show(""); }
  });
  panel.addEventListener("keydown", function (event) {
    var all = links(), at = all.indexOf(document.activeElement);
    if (event.key === "ArrowDown" && at + 1 < all.length) { event.preventDefault(); all[at + 1].focus(); }
    else if (event.key === "ArrowUp") { event.preventDefault(); (at > 0 ? all[at - 1] : input).focus(); }
    else if (event.key === "Escape") { input.focus(); input.value = ""; show(""); }
  });
  document.addEventListener("keydown", function (event) {
    var typing = /^(INPUT|TEXTAREA|SELECT)$/.test((document.activeElement || {}).tagName || "");
    if (event.key === "/" && !typing) { event.preventDefault(); input.focus(); }
  });
  document.addEventListener("click", function (event) {
    if (!panel.contains(event.target) && event.target !== input) panel.hidden = true;
  });
  input.addEventListener("focus", function () { if (input.value) show(input.value); });
  var asked = new URLSearchParams(window.location.search).get("q");
  if (asked) { input.value = asked; show(asked); }
})();
