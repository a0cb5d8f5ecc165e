/* charts.js - the charts several live figures share: bar panels, rows of word boxes, and the
 * tower of stacked losses.
 *
 * Does: draw into a drawing's context (draw.js's canvas), each chart from one options object;
 * colours come from ctx.colours, the figure's settings. Every value drawn is a number with its
 * name (data-q), so that tests/test_site.py can read it.
 *
 * Does not: compute what it draws (the figure passes the numbers), or hold a number, colour or
 * word that Python's pictures also use: the headroom above the bars, the box colours and every
 * label arrive as options.
 */

// One bar chart panel in box {x, y, w, h}: its title, bars on a zero line, each value above
// (or below) its bar; the bar of the truth (an index, -1 for none) hatched; headroom: the room
// above (and below) the bars, as a share of their range.
function bars(ctx, {box, names, values, truth, decimals, title, ylabel, q, headroom}) {
  const {x, y, w, h} = box;
  label(ctx, {x, y: y + 12, text: title, bold: true});
  const top = y + 24, height = h - 44;
  const low = Math.min(0, ...values), high = Math.max(0, ...values);
  const pad = headroom * ((high - low) || 1);
  const lo = low - (low < 0 ? pad : 0), hi = high + pad;
  const Y = (v) => top + height * (hi - v) / (hi - lo);
  const left = x + 48, slot = (w - 52) / names.length;
  label(ctx, {x: x + 10, y: top + height / 2, text: ylabel, size: -1, anchor: "middle",
              rotate: -90});
  values.forEach((v, i) => {
    const bx = left + i * slot + slot * 0.15, bw = slot * 0.7;
    el(ctx.svg, "rect", {x: bx, y: Math.min(Y(v), Y(0)), width: bw,
                         height: Math.max(Math.abs(Y(v) - Y(0)), 0.5),
                         fill: i === truth ? ctx.hatch : ctx.colours.other,
                         stroke: "black", "stroke-width": 0.6, "data-bar": `${q}:${names[i]}`});
    number(ctx, {x: bx + bw / 2, y: v >= 0 ? Y(v) - 4 : Y(v) + ctx.font + 2,
                 name: `${q}:${names[i]}`, value: v, decimals, anchor: "middle", size: -1});
    label(ctx, {x: bx + bw / 2, y: y + h - 4, text: names[i], anchor: "middle"});
  });
  el(ctx.svg, "line", {x1: left, x2: x + w, y1: Y(0), y2: Y(0), stroke: "currentColor"});
}

// A row of word boxes from (x, y), each `size` wide: the highlighted ones (positions) marked;
// each word's text named `${q}-${i}`.
function tokenRow(ctx, {x, y, size, tokens, highlight, q}) {
  const c = ctx.colours;
  tokens.forEach((t, i) => {
    const bx = x + i * size, marked = highlight.includes(i);
    el(ctx.svg, "rect", {x: bx + 3, y: y + 3, width: size - 6, height: size - 6, rx: 6,
                         fill: marked ? c.box.marked : c.box.plain,
                         stroke: marked ? c.truth : c.other, "stroke-width": marked ? 1.8 : 1});
    label(ctx, {x: bx + size / 2, y: y + size / 2 + 5, text: t, anchor: "middle",
                size: t.length > 6 ? -3 : 0, bold: marked, q: `${q}-${i}`,
                attrs: {fill: c.ink}});  // dark on the light box, in a dark theme too
  });
}

// One stacked bar in box {x, y, h}: a block per part ([key, label, value], in the colours of
// ctx.colours.stack), the total on top, named `name`. A label sits beside its block, or higher
// when the blocks below are too thin to keep the labels apart (a line joins it to its block).
function tower(ctx, {box, parts, total, name, decimals}) {
  const {x, y, h} = box, font = ctx.font, stack = ctx.colours.stack;
  const top = y + 26, bottom = y + h - 6;
  const scale = (bottom - top) / (total > 0 ? total * 1.02 : 1);
  let at = bottom, free = bottom + font;
  parts.forEach(([key, text, v], k) => {
    const height = v * scale, middle = at - height / 2;
    const ly = Math.min(middle + font / 3, free - font - 3);
    free = ly;
    el(ctx.svg, "rect", {x: x + 10, y: at - height, width: 70, height: Math.max(height, 0.5),
                         fill: stack[k % stack.length], stroke: "black", "stroke-width": 0.6});
    el(ctx.svg, "line", {x1: x + 80, y1: middle, x2: x + 92, y2: ly - font / 3,
                         stroke: "currentColor", "stroke-width": 0.6});
    number(ctx, {x: x + 96, y: ly, name: `part:${key}`, value: v, decimals,
                 prefix: `${text} = `});
    at -= height;
  });
  number(ctx, {x: x + 10, y: y + 16, name, value: total, decimals, bold: true, say: true,
               prefix: "total loss = "});
}
