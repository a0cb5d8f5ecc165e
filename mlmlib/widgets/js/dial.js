/* dial.js - Step 3's live figure: the probability of the truth as a needle on a dial; every
 * other word shares the rest.
 *
 * Does: a slider for P, and a half-circle dial from 0 to 1 in coloured bands, with P and 1 - P
 * beneath it. Settings (mlmlib.widgets.live.live_dial): sliders (one: p), label, bands
 * ([from, to, colour], ...), ticks, tick_radius and needle (shares of the radius), decimals.
 *
 * Does not: hold the bands, ticks or proportions (Python's probability_dial draws with the
 * same), only the page's own layout (where the dial sits, its size in pixels).
 */

KINDS.dial = {
  setup(fig) { fig.p = slider(fig, fig.config.sliders[0]); },
  draw(fig) {
    const c = fig.config, p = Number(fig.p.value);
    const ctx = canvas(fig, {width: 420, height: 270}), cx = 210, cy = 170, r = 120;
    const at = (t, radius) => [cx + radius * Math.cos(Math.PI * (1 - t)),
                               cy - radius * Math.sin(Math.PI * (1 - t))];
    for (const [from, to, colour] of c.bands) {
      const [x0, y0] = at(from, r), [x1, y1] = at(to, r);
      el(ctx.svg, "path", {d: `M ${x0} ${y0} A ${r} ${r} 0 0 1 ${x1} ${y1}`, fill: "none",
                           stroke: colour, "stroke-width": 16});
    }
    for (const t of c.ticks) {
      const [x, y] = at(t, c.tick_radius * r);
      label(ctx, {x, y: y + 4, text: String(t), anchor: "middle", size: -1});
    }
    const [nx, ny] = at(p, c.needle * r);
    el(ctx.svg, "line", {x1: cx, y1: cy, x2: nx, y2: ny, stroke: "currentColor",
                         "stroke-width": 3, "data-needle": String(p)});
    el(ctx.svg, "circle", {cx, cy, r: 5, fill: "currentColor"});
    number(ctx, {x: cx, y: cy + 34, name: "p", value: p, decimals: c.decimals,
                 anchor: "middle", bold: true, say: true, prefix: `${c.label} = `});
    number(ctx, {x: cx, y: cy + 56, name: "rest", value: 1 - p, decimals: c.decimals,
                 anchor: "middle", prefix: "every other word together: 1 − P = "});
  },
};
