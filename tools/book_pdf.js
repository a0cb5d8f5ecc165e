/* Shapes the singlehtml page into a book before Chromium prints it (tools/book_pdf.py runs
 * this in the page, after MathJax has typeset it, with the book's title and the parts of
 * _toc.yml). It returns what it did, for the report.
 *
 * - Only the article stays: the theme's navigation, header, sidebars and footer go.
 * - Headings are renumbered so that the PDF's bookmarks follow the book: the parts are h1,
 *   a chapter's title h2 (a page nested under a chapter, h3), and its sections below that.
 * - A cover and a linked table of contents go in front.
 * - What the site hides behind a click (the exercises' solutions, the recall questions'
 *   answers) moves to "Solutions and answers" at the end, linked both ways.
 * - Links into the page become in-document links (the PDF keeps them); links to the site's
 *   other files lose their address (the PDF travels without those files).
 */
(book) => {
  const article = document.querySelector("article.bd-article");
  if (!article) throw new Error("no article.bd-article on the page: has the theme changed?");
  const make = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const slug = (doc) => "mlm-" + doc.replace(/[^A-Za-z0-9]+/g, "-");
  const isHeading = (n) => /^H[1-6]$/.test(n.tagName);

  // ---------------------------------------------------------------- the pages of the book
  // singlehtml puts <span id="document-DOC"></span> before each page's top section.
  const docs = new Map();  // docname -> {section, depth, title}
  const depth = new Map();
  book.parts.forEach((part) => part.docs.forEach((d) => depth.set(d.doc, d.depth)));
  for (const span of article.querySelectorAll('span[id^="document-"]')) {
    const doc = span.id.slice("document-".length);
    const section = span.nextElementSibling;
    if (!section || section.tagName !== "SECTION" || !depth.has(doc)) {
      throw new Error(`page ${doc}: no top section after its marker, or not in _toc.yml`);
    }
    section.dataset.mlmDoc = doc;
    docs.set(doc, {section, depth: depth.get(doc)});
  }
  for (const d of depth.keys()) {
    if (!docs.has(d)) throw new Error(`page ${d} of _toc.yml is not on the single page`);
  }

  // ---------------------------------------------------------------- headings
  // A heading's new level: its page's depth (chapter 1, a page under a chapter 2) plus its
  // depth inside its page (the title 1). The root page (the introduction) keeps its levels.
  for (const h of Array.from(article.querySelectorAll("h1, h2, h3, h4, h5, h6"))) {
    let r = 0, node = h.parentElement, page = null;
    while (node && node !== article) {
      if (node.tagName === "SECTION") {
        r += 1;
        if (node.dataset.mlmDoc) { page = node; break; }
      }
      node = node.parentElement;
    }
    if (!page) continue;
    const level = Math.min(6, docs.get(page.dataset.mlmDoc).depth + r);
    const fresh = make(`h${level}`);
    for (const a of h.attributes) fresh.setAttribute(a.name, a.value);
    fresh.append(...h.childNodes);
    h.replaceWith(fresh);
  }
  // The PDF's bookmarks take a heading's text as Chromium draws it: a formula typeset by
  // MathJax (CSS-generated glyphs) is left out, and so is the space where a line wraps. So
  // formulas in headings become MathML, which Chromium draws itself as text, and spaces in
  // headings are kept (white-space: pre-wrap in book_pdf.css, after collapsing them here).
  for (const h of article.querySelectorAll("h1, h2, h3, h4, h5, h6")) {
    for (const m of Array.from(h.querySelectorAll("mjx-container"))) {
      const mml = m.querySelector("mjx-assistive-mml math");
      if (!mml) continue;
      const math = mml.cloneNode(true);
      math.querySelectorAll('[mathvariant="bold"]').forEach((n) => { n.style.fontWeight = "bold"; });
      m.replaceWith(math);
    }
    const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.parentElement.closest("math") ? NodeFilter.FILTER_REJECT
                                                           : NodeFilter.FILTER_ACCEPT)});
    const texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    texts.forEach((t) => { t.data = t.data.replace(/\s+/g, " "); });
    const content = Array.from(h.childNodes).filter((n) =>
      !(n.classList && n.classList.contains("headerlink")));
    if (content.length && content[0].nodeType === Node.TEXT_NODE) {
      content[0].data = content[0].data.trimStart();
    }
    const end = content[content.length - 1];
    if (end && end.nodeType === Node.TEXT_NODE) end.data = end.data.trimEnd();
  }
  for (const [doc, info] of docs) {
    info.title = Array.from(info.section.children).find(isHeading);
    if (!info.title) throw new Error(`page ${doc} has no title`);
    info.title.id = slug(doc);
  }
  const intro = article.querySelector("h1");
  intro.id = "mlm-introduction";

  // The parts: a heading before each part's first page; every page from a new sheet.
  const partHeadings = [];
  book.parts.forEach((part, i) => {
    const first = docs.get(part.docs[0].doc).section;
    first.classList.add("mlm-first-of-part");
    if (!part.caption) return;
    const h = make("h1", {class: "mlm-part", id: `mlm-part-${i + 1}`}, part.caption);
    first.previousElementSibling.before(h);  // before the page's marker span
    partHeadings.push(h);
  });
  for (const {section} of docs.values()) section.classList.add("mlm-page");

  // ---------------------------------------------------------------- hidden behind a click
  // Solutions (sphinx-exercise) and dropdown admonitions (the recall questions): their
  // content moves to the end, in page order, under the title of the page they come from.
  const answers = make("section", {class: "mlm-answers", id: "mlm-answers"});
  answers.append(make("h1", {id: "mlm-answers-title"}, "Solutions and answers"));
  answers.append(make("p", {}, "On the site these are behind a click, under the exercise " +
    "or question they answer; here they are collected, chapter by chapter. Each one links " +
    "back to its question."));
  let moved = 0, solutions = 0;
  const pageOf = (node) => node.closest("section[data-mlm-doc]");
  const byPage = new Map();
  for (const box of article.querySelectorAll(".admonition.dropdown")) {
    if (box.parentElement.closest(".admonition.dropdown")) continue;  // moves with its parent
    const page = pageOf(box);
    if (!page) continue;
    if (!byPage.has(page)) byPage.set(page, []);
    byPage.get(page).push(box);
  }
  for (const [page, boxes] of byPage) {
    const info = docs.get(page.dataset.mlmDoc);
    const heading = make("h2", {id: `${slug(page.dataset.mlmDoc)}-answers`});
    const back = make("a", {href: `#${info.title.id}`});
    back.append(...Array.from(info.title.cloneNode(true).childNodes)
      .filter((n) => !(n.classList && n.classList.contains("headerlink"))));
    heading.append(back);
    answers.append(heading);
    for (const box of boxes) {
      moved += 1;
      const id = `mlm-answer-${moved}`;
      const title = box.querySelector(":scope > .admonition-title");
      box.classList.remove("dropdown", "toggle", "toggle-hidden");
      box.querySelectorAll(":scope > .admonition-title > .toggle-button").forEach((b) => b.remove());
      if (box.classList.contains("solution")) {
        solutions += 1;
        // The whole solution moves; a line with a link stays where it was.
        if (!box.id) box.id = `${id}-box`;
        const note = make("p", {class: "mlm-moved", id});
        const link = make("a", {href: `#${box.id}`});
        link.append(...Array.from(title.cloneNode(true).childNodes).map((n) =>
          n.nodeType === Node.ELEMENT_NODE && n.tagName === "A" ? make("span", {}, n.textContent) : n));
        note.append(link, " is at the end of the book, under “Solutions and answers”.");
        box.replaceWith(note);
        const ret = make("p", {class: "mlm-back"});
        ret.append(make("a", {href: `#${id}`}, "Back to the exercise"));
        box.append(ret);
        answers.append(box);
      } else {
        // A recall question: the question stays, its answer moves.
        const question = make("div", {class: "admonition mlm-question", id});
        question.append(title.cloneNode(true));
        const pointer = make("p", {class: "mlm-moved"});
        pointer.append(make("a", {href: `#${id}-answer`}, "Answer"), " at the end of the book.");
        question.append(pointer);
        box.replaceWith(question);
        box.id = `${id}-answer`;
        box.classList.add("mlm-answer");
        const label = box.querySelector(":scope > .admonition-title");
        label.prepend("Recall: ");
        const ret = make("p", {class: "mlm-back"});
        ret.append(make("a", {href: `#${id}`}, "Back to the question"));
        box.append(ret);
        answers.append(box);
      }
    }
  }
  // Anything a toggle hid inside what moved shows in full.
  answers.querySelectorAll(".toggle-hidden").forEach((n) => n.classList.remove("toggle-hidden"));
  answers.querySelectorAll(".toggle-button").forEach((n) => n.remove());

  // ---------------------------------------------------------------- cover and contents
  const cover = make("section", {class: "mlm-cover"});
  cover.append(make("p", {class: "mlm-cover-title"}, book.title),
               make("p", {class: "mlm-cover-author"}, book.author),
               make("p", {class: "mlm-cover-note"},
                    "The course's site as one document, printed " + book.date + ". " +
                    "Every number and figure was computed by the code shown next to it; " +
                    "the “Try it” figures, live on the site, are shown here at their " +
                    "starting settings."));
  const contents = make("nav", {class: "mlm-contents", id: "mlm-contents"});
  contents.append(make("h1", {id: "mlm-contents-title"}, "Contents"));
  const list = make("ul");
  // An entry: a link with the text, or with a copy of a heading's content (its formulas too).
  const entry = (href, title, cls) => {
    const li = make("li", cls ? {class: cls} : {});
    const a = make("a", {href: `#${href}`});
    if (typeof title === "string") {
      a.textContent = title;
    } else {
      a.append(...Array.from(title.cloneNode(true).childNodes));
      a.querySelectorAll(".headerlink").forEach((n) => n.remove());
    }
    li.append(a);
    return li;
  };

  list.append(entry(intro.id, intro, "mlm-toc-top"));
  book.parts.forEach((part, i) => {
    let into = list;
    if (part.caption) {
      const li = entry(`mlm-part-${i + 1}`, part.caption, "mlm-toc-part");
      into = make("ul");
      li.append(into);
      list.append(li);
    }
    const stack = [into];
    for (const d of part.docs) {
      while (stack.length > d.depth) stack.pop();
      const li = entry(slug(d.doc), docs.get(d.doc).title);
      stack[stack.length - 1].append(li);
      const sub = make("ul");
      li.append(sub);
      stack.push(sub);
    }
  });
  list.append(entry("mlm-answers-title", "Solutions and answers", "mlm-toc-top"));
  list.querySelectorAll("ul:empty").forEach((n) => n.remove());
  contents.append(list);

  // ---------------------------------------------------------------- links
  // Into the page: singlehtml writes them as book/intro.html#x or #document-DOC.
  const here = new URL(document.location.href);
  let unlinked = 0;
  for (const a of [article, answers].flatMap((n) => Array.from(n.querySelectorAll("a[href]")))) {
    const url = new URL(a.getAttribute("href"), here);
    const samePage = url.origin === here.origin &&
      (url.pathname === here.pathname || url.pathname === book.root);
    if (samePage && url.hash) {
      let target = decodeURIComponent(url.hash.slice(1));
      if (target.startsWith("document-")) target = slug(target.slice("document-".length));
      a.setAttribute("href", `#${target}`);
    } else if (url.origin === here.origin) {
      a.removeAttribute("href");  // another file of the site: the PDF does not carry it
      a.classList.add("mlm-unlinked");
      unlinked += 1;
    }
  }

  // The execution table's ✅ and ❌ are emoji, which the printing machine may have no font
  // for: the same marks from DejaVu.
  const marks = {"✅": "✓", "❌": "✗"};
  for (const cell of article.querySelectorAll("td")) {
    const text = cell.textContent.trim();
    if (marks[text]) cell.textContent = marks[text];
  }

  // ---------------------------------------------------------------- the book alone
  // The theme styles the content under .bd-main .bd-content .bd-article-container: kept.
  const main = make("main", {class: "mlm-book bd-main"});
  const content = make("div", {class: "bd-content"});
  const container = make("div", {class: "bd-article-container"});
  container.append(cover, contents, article, answers);
  content.append(container);
  main.append(content);
  document.body.replaceChildren(main);
  document.documentElement.dataset.theme = "light";
  document.documentElement.dataset.mode = "light";
  document.title = book.title;

  // The bookmarks' titles, one per heading Chromium will print, in order: the heading's text,
  // formulas written out in a line (h_i, P(x_i∣x_∖M)). book_pdf.py puts them in the PDF in
  // place of Chromium's own, which lose the spaces around formulas, and repeat a heading's
  // text when a break before it was avoided.
  const line = (node) => {
    if (node.nodeType === Node.TEXT_NODE) return node.data;
    if (node.nodeType !== Node.ELEMENT_NODE) return "";
    const kids = Array.from(node.children);
    const tag = node.tagName.toLowerCase();
    if (node.classList.contains("headerlink") || tag === "annotation") return "";
    if (tag === "msub") return line(kids[0]) + "_" + line(kids[1]);
    if (tag === "msup") return line(kids[0]) + "^" + line(kids[1]);
    if (tag === "msubsup") return line(kids[0]) + "_" + line(kids[1]) + "^" + line(kids[2]);
    if (tag === "mfrac") return line(kids[0]) + "/" + line(kids[1]);
    if (tag === "msqrt") return "√(" + kids.map(line).join("") + ")";
    if (tag === "semantics") return line(kids[0]);
    return Array.from(node.childNodes).map(line).join("");
  };
  const titles = Array.from(document.querySelectorAll("h1, h2, h3, h4, h5, h6"))
    .filter((h) => h.getClientRects().length > 0)
    .map((h) => line(h).replace(/\u2061/g, " ").replace(/[\u2062-\u2064]/g, "")
      .replace(/\s+/g, " ").trim());
  return {
    titles,
    chapters: docs.size,
    parts: partHeadings.length,
    exercises: article.querySelectorAll(".exercise.admonition").length,
    solutions,
    answers: moved - solutions,
    unlinked,
    live: article.querySelectorAll(".mlm-live").length,
  };
}
