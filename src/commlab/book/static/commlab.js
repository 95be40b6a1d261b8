/* commlab's two fixes to the theme's behaviour on a page. */
(function () {
  /* 1. Search snippets without the formulas' TeX source: Sphinx builds a result's snippet from the text of
     its page, where a formula is still "\(2(N-1)/N\)" before MathJax typesets it; each formula is left out
     of that text (an ellipsis stands for it), and so are the theme's buttons ("Light Dark", "Contents"). */
  function patchSearch() {
    if (typeof Search === "undefined" || Search.commlabPatched) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math, mjx-container, script[type^='math/']").forEach((el) => el.replaceWith("\u2026"));
      // and without the theme's buttons and page contents, which sit inside the page's main element
      doc.querySelectorAll(".bd-header-article, .bd-sidebar-secondary, .prev-next-area, .bd-footer-article")
        .forEach((el) => el.remove());
      return original(doc.documentElement.outerHTML, anchor).replace(/\$\$?[^$]*\$\$?/g, "\u2026");
    };
    Search.commlabPatched = true;
  }

  /* 2. "Contents" and the navigation button in the article's header: pydata-sphinx-theme opens its sidebar
     drawers from the first .primary-toggle / .secondary-toggle of the page only, and at a phone's width that
     one (in the site header) is hidden while sphinx-book-theme shows its own; a press on any other toggle is
     handed to the first, which does what the theme means (a drawer over the page where the reader is, or
     at a desktop's width the sidebar shown or hidden). */
  function forwardToggles() {
    for (const kind of ["primary-toggle", "secondary-toggle"]) {
      const [first, ...others] = document.querySelectorAll("." + kind);
      for (const other of others) {
        other.addEventListener("click", (event) => {
          event.preventDefault();
          event.stopImmediatePropagation();
          first.click();
        }, true);
      }
    }
  }

  patchSearch();
  document.addEventListener("DOMContentLoaded", () => { patchSearch(); forwardToggles(); });
})();
