/* curve.js - the curve y = -log p, on which the -log p and edge-case figures mark points.
 *
 * Does: draw -log p for p from pMin to 1, on a linear or a logarithmic p axis, with its axes,
 * their labels and the named points, into a drawing's context (draw.js's canvas).
 *
 * Does not: choose where the curve starts or what its axes say (pMin and the labels come from
 * the figure's settings, which Python's neg_log_curve draws with too); its ticks are the page's
 * own layout.
 */

// The curve in box {x, y, w, h}; points: [[name, p], ...], each marked and named on it.
function curve(ctx, {box, pMin, logX, points, xlabel, ylabel}) {
  const {x, y, w, h} = box, colours = ctx.colours;
  const left = x + 52, bottom = y + h - 36, right = x + w - 10, top = y + 10;
  const yMax = negLog(pMin) * 1.08, low = Math.log10(pMin);
  const X = logX ? (p) => left + (right - left) * (Math.log10(p) - low) / -low
    : (p) => left + (right - left) * (p - pMin) / (1 - pMin);
  const Y = (v) => bottom - (bottom - top) * v / yMax;
  const path = [];
  for (let k = 0; k <= 200; k++) {
    const p = logX ? Math.pow(10, low * (1 - k / 200)) : pMin + (1 - pMin) * k / 200;
    path.push(`${X(p).toFixed(2)},${Y(negLog(p)).toFixed(2)}`);
  }
  el(ctx.svg, "polyline", {points: path.join(" "), fill: "none", stroke: colours.other,
                           "stroke-width": 2.4});
  el(ctx.svg, "line", {x1: left, x2: right, y1: bottom, y2: bottom, stroke: "currentColor"});
  el(ctx.svg, "line", {x1: left, x2: left, y1: top, y2: bottom, stroke: "currentColor"});
  const ticks = logX ? [-12, -9, -6, -3, 0].filter((e) => e >= low)
    .map((e) => [parseFloat(`1e${e}`), e === 0 ? "1" : `10^${e}`])
    : [0, 0.25, 0.5, 0.75, 1].map((p) => [Math.max(p, pMin), String(p)]);
  for (const [p, text] of ticks) {
    el(ctx.svg, "line", {x1: X(p), x2: X(p), y1: bottom, y2: bottom + 4, stroke: "currentColor"});
    label(ctx, {x: X(p), y: bottom + 17, text, anchor: "middle", size: -1});
  }
  const step = yMax > 20 ? 10 : yMax > 8 ? 2 : 1;
  for (let v = 0; v <= yMax; v += step) {
    label(ctx, {x: left - 6, y: Y(v) + 4, text: String(v), anchor: "end", size: -1});
  }
  label(ctx, {x: (left + right) / 2, y: y + h - 4, anchor: "middle",
              text: xlabel + (logX ? " (log scale)" : "")});
  label(ctx, {x: x + 12, y: (top + bottom) / 2, text: ylabel, anchor: "middle", rotate: -90});
  for (const [name, p] of points) {
    el(ctx.svg, "circle", {cx: X(p), cy: Y(negLog(p)), r: 5, fill: colours.truth,
                           "data-point": name});
    const nearRight = X(p) > right - 90;  // its name to the left, inside the drawing
    label(ctx, {x: X(p) + (nearRight ? -8 : 8), y: Y(negLog(p)) - 8, text: name, bold: true,
                anchor: nearRight ? "end" : "start", size: -1});
  }
}
