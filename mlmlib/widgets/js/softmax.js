/* softmax.js - Step 4's live figure: a slider per word's score; softmax's three stages.
 *
 * Does: the raw scores, their exponentials (and their total Z) and the probabilities, as three
 * bar panels, the true word hatched, and P(truth) beneath. Settings
 * (mlmlib.widgets.live.live_softmax): sliders (one per word), words, truth (or null), stages
 * ([title, axis label] of each panel), headroom, decimals.
 *
 * Does not: hold the panels' titles and labels, the headroom or the sliders' ranges (Python's
 * softmax_stages draws with the same); computes with maths.js's softmax.
 */

KINDS.softmax = {
  setup(fig) { fig.scores = fig.config.sliders.map((spec) => slider(fig, spec)); },
  draw(fig) {
    const c = fig.config, s = fig.scores.map((x) => Number(x.value));
    const w = s.map((x) => Math.exp(x)), p = softmax(s), t = c.words.indexOf(c.truth);
    const ctx = canvas(fig, {width: 560, height: 715});
    const panel = (y, values, [title, ylabel], q, decimals) => bars(ctx, {
      box: {x: 0, y, w: 560, h: 200}, names: c.words, values, truth: t, decimals, title,
      ylabel, q, headroom: c.headroom});
    panel(0, s, c.stages[0], "score", c.sliders[0].decimals);
    panel(215, w, c.stages[1], "exp", c.decimals);
    number(ctx, {x: 48, y: 438, name: "Z", value: sum(w), decimals: c.decimals,
                 prefix: "their total Z = "});
    panel(455, p, c.stages[2], "prob", c.decimals);
    if (t >= 0) {
      number(ctx, {x: 10, y: 690, name: "truth", value: p[t], decimals: c.decimals, bold: true,
                   say: true, prefix: `the true word is '${c.truth}' (hatched): P(${c.truth}) = `});
    }
  },
};
