/* Sphinx search scorer (html_search_scorer): a result on a page whose own title names the searched words
   ranks above the same words on another page. Searching "ring" puts the ring chapter's "The ring" first,
   then sections of other chapters that mention rings. The rest is Sphinx's default scoring. */
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename, kind] = result;
    const query = (new URLSearchParams(window.location.search).get("q") || "").toLowerCase();
    const words = query.split(/\s+/).filter((w) => w.length > 1);
    const pageTitle = (title || "").split(" > ")[0].toLowerCase();
    const named = words.length > 0 && words.every((w) => pageTitle.includes(w));
    return score + (named ? 10 : 0);
  },
  objNameMatch: 11, objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 }, objPrioDefault: 0,
  title: 15, partialTitle: 7, term: 5, partialTerm: 2,
};
