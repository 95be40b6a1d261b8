/* Search snippets without the formulas' TeX source: Sphinx builds a result's snippet from the text of its
   page, where a formula is still "\(2(N-1)/N\)" before MathJax typesets it; the formulas are left out of
   that text (an ellipsis stands for each). */
(function () {
  function patch() {
    if (typeof Search === "undefined" || Search.commlabPatched) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math, mjx-container, script[type^='math/']").forEach((el) => el.replaceWith("\u2026"));
      return original(doc.documentElement.outerHTML, anchor).replace(/\$\$?[^$]*\$\$?/g, "\u2026");
    };
    Search.commlabPatched = true;
  }
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
