/* Sphinx search scorer (loaded before searchtools.js, which keeps a Scorer it finds): a section whose own
   heading names the searched words ranks first, then the pages whose title names them, then the pages that
   only mention them. Searching
   "ring" puts the ring chapter's "The ring" first, above another chapter's section that mentions rings.
   Everything else is Sphinx's default scoring. */
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename, kind] = result;
    const query = (new URLSearchParams(window.location.search).get("q") || "").toLowerCase();
    const words = query.split(/\s+/).filter((w) => w.length > 1);
    const names = (text) => words.length > 0 && words.every((w) => (text || "").toLowerCase().includes(w));
    const [pageTitle, ...rest] = (title || "").split(" > ");
    const section = rest.join(" > ");
    let bonus = 0;
    if (anchor && section && names(section)) bonus += 20;
    if (names(pageTitle)) bonus += 5;
    return score + bonus;
  },
  objNameMatch: 11, objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 }, objPrioDefault: 0,
  title: 15, partialTitle: 7, term: 5, partialTerm: 2,
};
