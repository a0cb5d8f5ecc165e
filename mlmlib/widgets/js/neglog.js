/* neglog.js - Step 5's live figure: the reader's p on the curve -log p, the badness of a guess.
 *
 * Does: a slider for P(truth), the curve with the reader's point and the chapter's named
 * points, and -log p beneath. Settings (mlmlib.widgets.live.live_neg_log): sliders (one: p),
 * points ({name: p}), you (the reader's point's name), p_min, axes ([x label, y label]),
 * decimals.
 *
 * Does not: hold where the curve starts, its labels or the slider's range (Python's
 * neg_log_curve draws with the same); computes with maths.js's negLog.
 */

KINDS.neglog = {
  setup(fig) { fig.p = slider(fig, fig.config.sliders[0]); },
  draw(fig) {
    const c = fig.config, p = Number(fig.p.value), named = Object.entries(c.points);
    const ctx = canvas(fig, {width: 600, height: 420});
    curve(ctx, {box: {x: 0, y: 0, w: 600, h: 340}, pMin: c.p_min, logX: false,
                points: [...named, [c.you, p]], xlabel: c.axes[0], ylabel: c.axes[1]});
    number(ctx, {x: 10, y: 372, name: "loss", value: negLog(p), decimals: c.decimals,
                 bold: true, say: true,
                 prefix: `${c.you} = ${p.toFixed(c.sliders[0].decimals)}:  −log p = `});
    label(ctx, {x: 10, y: 396, size: -1, text: named
      .map(([name, q]) => `${name}: ${negLog(q).toFixed(c.decimals)}`).join("   ")});
  },
};
