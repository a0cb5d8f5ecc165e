/* posterior.js - the toy world's live figure: type a sentence with blanks and read the exact
 * posterior of each blank.
 *
 * Does: a text box; the sentence read by maths.js's readSentence (the rule in the settings),
 * checked by its sentenceError (known words, the world's length, a blank), and for each blank
 * its likeliest words as bars from maths.js's posterior; or one line that says what is wrong.
 * Settings (mlmlib.widgets.ask.live_posterior): world (its tables), sentence, rule ({pattern,
 * blanks}), top (how many words a blank shows), decimals.
 *
 * Does not: hold the blanks or the rule that splits a sentence (Python's read_sentence uses the
 * same, sent in the settings), or compute anything the world's tables do not give.
 */

KINDS.posterior = {
  setup(fig) {
    fig.text = sentenceBox(fig);
  },
  draw(fig) {
    const c = fig.config, world = c.world, blanks = c.rule.blanks;
    const {words, masked} = readSentence(fig.text.value, c.rule);
    const known = (w) => Object.prototype.hasOwnProperty.call(world.word_id, w);
    let error = sentenceError({words, masked}, {known, maxLen: world.max_len, blanks,
                                                example: c.sentence}), post = [];
    if (!error) {
      try { post = posterior(world, words, masked); } catch (err) { error = err.message; }
    }
    if (error) {  // HTML text, so that a long message wraps at any width
      el(fig.picture, "p", {class: "mlm-message", "data-q": "error", "data-say": 1}, error);
      return;
    }
    const rows = c.top, tall = rows * 24 + 40;
    const ctx = canvas(fig, {width: 560, height: 40 + masked.length * tall});
    post.forEach((probs, k) => {
      const best = probs.map((p, v) => [p, v]).filter(([p]) => p > 0)  // never a ruled-out word
        .sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, rows);
      const y0 = 20 + k * tall;
      label(ctx, {x: 10, y: y0, text: `blank ${k + 1} (word ${masked[k] + 1}): its likeliest words`,
                  bold: true, say: true});
      best.forEach(([p, v], r) => {
        const y = y0 + 12 + r * 24, name = world.words[v], width = 360 * p / best[0][0];
        label(ctx, {x: 110, y: y + 15, text: name, anchor: "end"});
        el(ctx.svg, "rect", {x: 118, y: y + 2, width: Math.max(width, 0.5), height: 18,
                             fill: ctx.colours.other, stroke: "black", "stroke-width": 0.5});
        number(ctx, {x: 124 + width, y: y + 15, name: `post-${k}:${name}`, value: p,
                     decimals: c.decimals});
      });
    });
  },
};
