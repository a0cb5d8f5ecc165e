/* ask.js - "Ask the model": type a toy-world sentence with blanks; for each blank, the exact
 * posterior's likeliest words beside the stored mini BERT's, and the loss each would pay.
 *
 * Does: a text box; the sentence read and refused as the live posterior reads it (bertio.js's
 * read, with the world's length); for each blank, the world's exact posterior (maths.js's
 * posterior) and the model's probabilities (bert.js's forward, then bertio.js's wordProbs:
 * its softmax over the world's words only), as two columns of bars on one scale, and three
 * numbers in nats: the posterior's entropy, the model's cross-entropy against it, and their
 * difference, the KL divergence; or one line that says what is wrong. Settings
 * (mlmlib.widgets.ask.live_ask_model): model (the stored weights, decoded once), world (its
 * tables), sentence, rule ({pattern, blanks}), top (the words a column shows), columns (their
 * titles), measures (the three numbers' labels, in the order above), unit, note (said under
 * the drawing), decimals (a probability's), nats_decimals.
 *
 * Does not: hold a label, the blanks or the rule (they come in the settings), or run the model
 * or the forward-backward itself (bert.js and maths.js do; tests/test_live_ask.py checks what
 * the page shows against MiniBert and ToyWorld.posterior).
 */

// [H(p), CE(p, q), KL(p || q)], in this order, with
// H(p) = -sum_v p_v log p_v;  CE(p, q) = -sum_v p_v log q_v;  KL(p || q) = sum_v p_v log(p_v / q_v)
// = CE(p, q) - H(p): each a sum over the words v that the exact posterior p allows (p_v > 0)
function blankLosses(p, q) {
  const seen = p.map((pv, v) => [pv, q[v]]).filter(([pv]) => pv > 0);
  return [sum(seen.map(([pv]) => 0 - pv * Math.log(pv))),
          sum(seen.map(([pv, qv]) => 0 - pv * Math.log(qv))),
          sum(seen.map(([pv, qv]) => pv * Math.log(pv / qv)))];
}
const LOSS_NAMES = ["entropy", "cross", "kl"];  // what each number is named (data-q)

// The `n` likeliest words that have a probability, as [p, word id], the likeliest first (of
// two equal ones, the word that comes first in the world's list)
const likeliest = (probs, n) => probs.map((p, v) => [p, v]).filter(([p]) => p > 0)
  .sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, n);

// One column from (x, y), a row each `row` high: its title, then a bar per word of `best`,
// `most` (a probability) the widest bar; each probability named `${q}:${word}`.
function askColumn(ctx, {x, y, row, title, best, words, most, q, decimals}) {
  label(ctx, {x, y: y + row - 8, text: title, bold: true});
  best.forEach(([p, v], r) => {
    const top = y + (r + 1) * row, name = words[v], width = 96 * p / most;
    label(ctx, {x: x + 112, y: top + row - 8, text: name, anchor: "end"});
    el(ctx.svg, "rect", {x: x + 118, y: top + 3, width: Math.max(width, 0.5), height: row - 8,
                         fill: ctx.colours.other, stroke: "black", "stroke-width": 0.5});
    number(ctx, {x: x + 122 + width, y: top + row - 8, name: `${q}:${name}`, value: p,
                 decimals});
  });
}

KINDS.ask = {
  setup(fig) {
    fig.model = decode(fig.config.model);
    fig.text = sentenceBox(fig);
  },
  draw(fig) {
    const c = fig.config, world = c.world;
    const got = read(fig.model, fig.text.value, {rule: c.rule, example: c.sentence,
                                                 maxLen: world.max_len});
    let error = got.error, post = [];
    if (!error) {
      try { post = posterior(world, got.words, got.masked); } catch (err) { error = err.message; }
    }
    if (error) {  // HTML text, so that a long message wraps at any width
      el(fig.picture, "p", {class: "mlm-message", "data-q": "error", "data-say": 1}, error);
      return;
    }
    const logits = forward(fig.model, got.ids).logits;
    // a blank's rows: its name, the columns' titles, `top` bars, three numbers, a gap
    const row = fig.font + 8, block = (c.top + 6) * row;
    const ctx = canvas(fig, {width: 560, height: got.masked.length * block});
    got.masked.forEach((i, k) => {
      const p = post[k], q = wordProbs(fig.model, logits[i + 1]);  // [CLS] is position 0
      const exact = likeliest(p, c.top), model = likeliest(q, c.top);
      const y = k * block, most = Math.max(exact[0][0], model[0][0]);
      label(ctx, {x: 0, y: y + row - 8, text: `blank ${k + 1} (word ${i + 1})`, bold: true,
                  say: true});
      const shared = {y: y + row, row, words: world.words, most, decimals: c.decimals};
      askColumn(ctx, {...shared, x: 0, title: c.columns[0], best: exact, q: `exact-${k}`});
      askColumn(ctx, {...shared, x: 280, title: c.columns[1], best: model, q: `model-${k}`});
      blankLosses(p, q).forEach((value, m) => number(ctx, {
        x: 0, y: y + (c.top + 3 + m) * row - 8, name: `${LOSS_NAMES[m]}-${k}`, value,
        format: (v) => `${v.toFixed(c.nats_decimals)} ${c.unit}`, prefix: `${c.measures[m]} = `,
        say: true}));
    });
    el(fig.picture, "p", {class: "mlm-note"}, c.note);
  },
};
