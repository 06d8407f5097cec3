/* The order of the search's results. Sphinx finds the pages that hold every word of the query;
   among them a chapter whose own title holds the whole query comes first, then the pages that
   use the query's words most often (wb-search-counts.js: how often each page uses each word).
   A section whose short heading holds the query (Sphinx ranks it above everything) counts as
   much as its page using the word in a heading; the main page and the README, titled after the
   workbook, are not chapters. */
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
    if (result[2] && result[3] === null) score = Math.min(score, 25);  // a section's heading
    const index = Search._index;
    const page = index ? index.docnames.indexOf(result[0]) : -1;
    const title = (page >= 0 ? index.titles[page] : result[1]) || "";
    if (query && title.toLowerCase().includes(query) && !title.startsWith("Attention Workbook"))
      score += 30;
    for (const term of terms) {
      const n = (counts[term] || {})[result[0]] || 0;
      score += Math.min(12, Math.round(4 * Math.log2(1 + n)));
    }
    return score;
  };
})();

/* Sphinx 8's count of results has no Chinese words in Debian's catalog: the Chinese edition
   says it in Chinese. */
if (document.documentElement.lang.startsWith("zh")) {
  new MutationObserver(() => {
    const status = document.querySelector("#search-results .search-summary");
    const m = status && status.textContent.match(/^Search finished, found (one|\d+) pages?/);
    if (m) status.textContent = `搜索完成，找到 ${m[1] === "one" ? 1 : m[1]} 个匹配的页面。`;
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
}
