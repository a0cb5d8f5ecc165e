/* draw.js - the drawing kit every live figure uses: elements, text, numbers, the canvas, and
 * the controls (sliders, a sentence box and toggle buttons).
 *
 * Does: make SVG and HTML elements. A drawing's helpers take its context (`ctx`, made by
 * canvas: the SVG, its font size, the figure's colours, its hatch) and one options object. A
 * number drawn carries its full value in data-v and its name in data-q (tests/test_site.py
 * reads them); text marked `say` is read out to a screen reader. KINDS holds the figures, by
 * kind: each figure's module adds its own {setup(fig), draw(fig)}.
 *
 * Does not: compute anything, know any figure, or hold a number, colour or word of the course:
 * sliders, colours and labels come in the figure's settings (mlmlib/widgets/live.py, ask.py).
 */

const KINDS = {};
const SVGNS = "http://www.w3.org/2000/svg";
const SVG_TAGS = ["svg", "g", "rect", "line", "path", "text", "circle", "polyline", "pattern",
                  "defs"];

function el(parent, tag, attrs, text) {
  const node = SVG_TAGS.includes(tag) ? document.createElementNS(SVGNS, tag)
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

// Text in a drawing. size: added to the drawing's font size (-1: a little smaller); rotate: in
// degrees about (x, y); q: its name (data-q); say: read out to a screen reader.
function label(ctx, {x, y, text, size = 0, anchor, bold, rotate, q, say, attrs}) {
  const a = {x, y, "font-size": ctx.font + size, fill: "currentColor"};
  if (anchor) a["text-anchor"] = anchor;
  if (bold) a["font-weight"] = "bold";
  if (rotate) a.transform = `rotate(${rotate} ${x} ${y})`;
  if (q !== undefined) a["data-q"] = q;
  if (say) a["data-say"] = 1;
  return el(ctx.svg, "text", Object.assign(a, attrs || {}), text);
}

// A number in a drawing, after its prefix: shown with `decimals` (or by `format`), its full
// value in data-v, its name in data-q; the other options as label's.
function number(ctx, {name, value, decimals, format, prefix = "", ...options}) {
  const shown = !Number.isFinite(value) ? "∞"
    : format ? format(value) : (value + 0).toFixed(decimals);
  return label(ctx, Object.assign(options, {q: name, text: prefix + shown,
                                            attrs: {"data-v": String(value)}}));
}

// A new drawing in the figure, `width` by `height` (it scales to the page's width), with the
// hatch that marks the true word; gives the drawing's context.
function canvas(fig, {width, height}) {
  const colours = fig.config.colours, id = `${fig.uid}-hatch`;
  const svg = el(fig.picture, "svg", {viewBox: `0 0 ${width} ${height}`, role: "img",
                                      "aria-label": fig.config.title, class: "mlm-svg"});
  const hatch = el(el(svg, "defs"), "pattern", {id, width: 6, height: 6,
                                                patternUnits: "userSpaceOnUse",
                                                patternTransform: "rotate(45)"});
  el(hatch, "rect", {width: 6, height: 6, fill: colours.truth});
  el(hatch, "line", {x1: 0, y1: 0, x2: 0, y2: 6, stroke: "black", "stroke-width": 1.2});
  return {svg, font: fig.font, colours, hatch: `url(#${id})`};
}

// A slider as the figure's settings give it: {name, label, min, max, step, value, decimals};
// in fig.controls, or in `parent`. Moving it redraws the figure.
function slider(fig, spec, parent) {
  const row = el(parent || fig.controls, "label", {class: "mlm-control"});
  el(row, "span", {class: "mlm-control-name"}, spec.label);
  const input = el(row, "input", {type: "range", min: spec.min, max: spec.max, step: spec.step,
                                  value: String(spec.value), "data-control": spec.name,
                                  "aria-label": spec.label});
  const shown = el(row, "output", {}, Number(input.value).toFixed(spec.decimals));
  input.addEventListener("input", () => {
    shown.textContent = Number(input.value).toFixed(spec.decimals);
    fig.redraw();
  });
  return input;
}

// The text box for a sentence with blanks, as the figure's settings give it (its rule's first
// blank, its starting sentence), across the whole width; typing in it redraws the figure.
function sentenceBox(fig) {
  const c = fig.config, row = el(fig.controls, "label", {class: "mlm-control mlm-wide"});
  el(row, "span", {class: "mlm-control-name"}, `sentence (${c.rule.blanks[0]} for a blank)`);
  const input = el(row, "input", {type: "text", value: c.sentence, "data-control": "sentence",
                                  spellcheck: "false", "aria-label": "sentence with blanks"});
  input.addEventListener("input", () => fig.redraw());
  return input;
}

// A button per token, pressed for the hidden ones; clicking one toggles it and redraws.
function toggles(fig, {tokens, hidden}) {
  const row = el(fig.controls, "div", {class: "mlm-toggles"});
  return tokens.map((t, i) => {
    const button = el(row, "button", {type: "button", "data-control": `token-${i}`,
                                      "aria-pressed": String(hidden.includes(i))},
                      `${i + 1}: ${t}`);
    button.addEventListener("click", () => {
      button.setAttribute("aria-pressed",
                          String(button.getAttribute("aria-pressed") !== "true"));
      fig.redraw();
    });
    return button;
  });
}

// The positions of the pressed buttons.
const pressed = (buttons) => buttons
  .map((b, i) => (b.getAttribute("aria-pressed") === "true" ? i : -1)).filter((i) => i >= 0);
