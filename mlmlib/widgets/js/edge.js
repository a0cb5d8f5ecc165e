/* edge.js - Step 7's live figure: |M| masked slots, each giving the truth P; the loss
 * |M| * (-log P) at its extremes.
 *
 * Does: sliders for |M| and for the power of ten of P, the curve -log P on a logarithmic axis
 * with P on it, P as "1 in ...", one slot's loss and the whole loss, and which case it is.
 * Settings (mlmlib.widgets.live.live_edge_cases): sliders (k, log10p), p_name, p_min, axes, cases
 * ({empty, perfect, near_zero, ordinary}: what the page says in each), near_zero (below it,
 * case C), decimals.
 *
 * Does not: hold the cases' titles, where the curve starts, the sliders' ranges or the
 * threshold of case C (Python's edge_cases picture titles its panels with the same); computes
 * with maths.js's negLog and slotsLoss.
 */

KINDS.edge = {
  setup(fig) { [fig.k, fig.e] = fig.config.sliders.map((spec) => slider(fig, spec)); },
  draw(fig) {
    const c = fig.config, k = Number(fig.k.value), p = Math.pow(10, Number(fig.e.value));
    const ctx = canvas(fig, {width: 600, height: 440});
    curve(ctx, {box: {x: 0, y: 0, w: 600, h: 330}, pMin: c.p_min, logX: true,
                points: [["each slot", p]], xlabel: c.axes[0], ylabel: c.axes[1]});
    number(ctx, {x: 10, y: 356, name: "p", value: p, prefix: `${c.p_name} = `,
                 format: (v) => `1 in ${Math.round(1 / v).toLocaleString("en")}`});
    number(ctx, {x: 10, y: 378, name: "slot", value: negLog(p), decimals: c.decimals,
                 prefix: "one slot: −log P = "});
    number(ctx, {x: 10, y: 402, name: "loss", value: slotsLoss(new Array(k).fill(p)),
                 decimals: c.decimals, bold: true, say: true, prefix: `${k} slot(s): loss = `});
    const why = k === 0 ? c.cases.empty : p === 1 ? c.cases.perfect
      : p < c.near_zero ? c.cases.near_zero : c.cases.ordinary;
    label(ctx, {x: 10, y: 428, text: why, bold: true, q: "case", say: true});
  },
};
