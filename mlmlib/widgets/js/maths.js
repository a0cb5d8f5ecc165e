/* maths.js - the numbers the live figures show, computed as mlmlib computes them.
 *
 * Does: sums, -log p, softmax (after subtracting the largest score, as mlmlib.loss.softmax),
 * the loss of several masked slots (the sum of their -log p), the reading of a typed sentence
 * into words and blanks (by the rule the settings send, as mlmlib.widgets.live.read_sentence) and
 * what is wrong with it (sentenceError: the live posterior's and bert.js's messages), and
 * the toy world's exact posterior (scaled forward-backward, as ToyWorld.posterior); all in
 * 64-bit floats. tests/test_live_js.py checks each against mlmlib on thousands of random inputs.
 *
 * Does not: touch the page, or hold a number or a word of the course: the rule, the blanks and
 * the world's tables arrive as arguments, from the figure's settings.
 */

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const negLog = (p) => 0 - Math.log(p);  // 0 - x: -log 1 is 0, not -0

// softmax(s)_v = exp(s_v - m) / sum_u exp(s_u - m),  m = max_u s_u
function softmax(scores) {
  const m = Math.max(...scores);
  const w = scores.map((s) => Math.exp(s - m));
  const z = sum(w);
  return w.map((x) => x / z);
}

// The loss of several masked slots, each giving the truth probability p: sum of -log p.
const slotsLoss = (probs) => sum(probs.map(negLog));

// A typed sentence, lower-cased, as its words (each a match of rule.pattern) and the positions
// of its blanks (the words in rule.blanks).
function readSentence(text, rule) {
  const words = text.toLowerCase().match(new RegExp(rule.pattern, "g")) || [];
  const masked = words.map((w, i) => (rule.blanks.includes(w) ? i : -1)).filter((i) => i >= 0);
  return {words, masked};
}

// What is wrong with a sentence read by readSentence, in the words the page shows; null when
// nothing is. check: {known (a word -> bool), maxLen, blanks, example (a sentence to show)}.
function sentenceError({words, masked}, {known, maxLen, blanks, example}) {
  const unknown = words.find((w) => !blanks.includes(w) && !known(w));
  if (!words.length) return `type a sentence, e.g. ${example}`;
  if (unknown) return `'${unknown}' is not a word of the toy world`;
  if (words.length > maxLen) {
    return `the toy world's sentences have 1 to max_len = ${maxLen} words, this one ` +
      `${words.length}`;
  }
  if (!masked.length) return `no blank: write ${blanks[0]} where a word is hidden`;
  return null;
}

// The toy world's exact posterior P(x_i = v | the visible words, the length) at each masked
// position, as ToyWorld.posterior: scaled forward and backward messages, gamma = alpha * beta.
// world: {states, words, word_id, start, trans, stop, emit} (emit: one {word id: p} per state).
function posterior(world, words, masked) {
  const S = world.states.length, T = words.length;
  const e = words.map((w, t) => {
    if (masked.includes(t)) return new Array(S).fill(1);
    const id = world.word_id[w];
    return world.emit.map((row) => row[id] || 0);
  });
  const alpha = [], beta = new Array(T);
  let a = world.start.map((p, s) => p * e[0][s]);
  for (let t = 0; t < T; t++) {
    if (t) {
      const before = alpha[t - 1];
      a = world.start.map((_, s) => sum(before.map((x, r) => x * world.trans[r][s])) * e[t][s]);
    }
    const total = sum(a);
    if (total === 0) {
      throw new Error("this sentence is impossible in the toy world: its words cannot " +
                      `follow each other up to word ${t + 1}`);
    }
    alpha.push(a.map((x) => x / total));
  }
  if (sum(alpha[T - 1].map((x, s) => x * world.stop[s])) === 0) {
    throw new Error("this sentence is impossible in the toy world: it cannot end after " +
                    "its last word (the world's sentences end with '.')");
  }
  let b = world.stop.slice();
  for (let t = T - 1; t >= 0; t--) {
    if (t < T - 1) {
      const next = e[t + 1].map((x, s) => x * beta[t + 1][s]);
      b = world.trans.map((row) => sum(row.map((x, s) => x * next[s])));
    }
    const total = sum(b);
    beta[t] = total > 0 ? b.map((x) => x / total) : b;
  }
  return masked.map((t) => {
    const g = alpha[t].map((x, s) => x * beta[t][s]);
    const z = sum(g);
    const gamma = g.map((x) => x / z);
    return world.words.map((_, v) => sum(gamma.map((x, s) => x * (world.emit[s][v] || 0))));
  });
}

const MATHS = {sum, negLog, softmax, slotsLoss, readSentence, posterior};
