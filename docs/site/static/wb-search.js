/* The order of the search's results. Sphinx finds the pages that hold every word of the query;
   among them a page whose own title holds the whole query comes first, then the pages that use
   the query's words most often (wb-search-counts.js: how often each page uses each word). */
(() => {
  if (typeof Scorer === "undefined" || typeof Search === "undefined") return;
  const counts = window.WB_SEARCH_COUNTS || {};
  const query = (new URLSearchParams(window.location.search).get("q") || "").trim().toLowerCase();
  const stemmer = typeof Stemmer === "undefined" ? null : new Stemmer();
  const split = typeof splitQuery === "undefined" ? (q => q.split(/\s+/)) : splitQuery;
  const terms = split(query).filter(t => t).map(t => (stemmer ? stemmer.stemWord(t) : t));
  const base = Scorer.score;
  Scorer.score = result => {
    let score = base ? base(result) : result[4];
    const index = Search._index;
    const page = index ? index.docnames.indexOf(result[0]) : -1;
    const title = (page >= 0 ? index.titles[page] : result[1]) || "";
    if (query && title.toLowerCase().includes(query)) score += 30;
    for (const term of terms) {
      const n = (counts[term] || {})[result[0]] || 0;
      score += Math.min(12, Math.round(4 * Math.log2(1 + n)));
    }
    return score;
  };
})();
