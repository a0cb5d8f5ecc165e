/* bert.js - the mini BERT's forward pass in the page, stage by stage, as mlmlib.byhand.forward
 * writes it in NumPy.
 *
 * Does: one function per stage, each named as its Python twin (in camelCase) with its equation
 * right above it: embed, layerNorm, attentionScores, attentionWeights, attentionHead, splitHeads,
 * multiHead, gelu (the exact one, with erf written out), feedForward, block, mlmHead, forward.
 * forward(weights, ids) returns the scores of every word at every position and each layer's
 * and head's attention weights, all in 64-bit floats. A matrix is an array of rows; a weight
 * has one row per output, as in PyTorch (applied as x W^T + b). weights: what bertio.js's
 * decode gives ({config, tensors by the model's own names}). tests/test_live_bert.py checks it
 * against MiniBert on the stored model.
 *
 * Does not: read a sentence or decode the stored weights (bertio.js), train, take a batch or
 * padding (one sentence, every token real), or hold a number of the model (its config does).
 */

const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

// y = x W^T + b: one dot product of each row of x with each row of W, plus the bias
const linear = (x, W, b) => x.map((row) => W.map((w, o) => dot(row, w) + b[o]));  // (T, out)

// e_i = E_word[x_i] + E_pos[i] + E_seg[0]: every token of one sentence, segment A
function embed(ids, {word, position, segment}) {
  if (ids.length > position.length) {
    throw new Error(`${ids.length} tokens but only ${position.length} positions`);
  }
  return ids.map((id, i) => word[id].map((x, c) => x + position[i][c] + segment[0][c]));
}

// LN(x) = gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta, over each row's d entries
function layerNorm(x, gamma, beta, eps) {
  return x.map((row) => {
    const mean = sum(row) / row.length;
    const variance = sum(row.map((v) => (v - mean) ** 2)) / row.length;  // divides by d
    const scale = Math.sqrt(variance + eps);
    return row.map((v, c) => gamma[c] * (v - mean) / scale + beta[c]);
  });
}

// S[i, j] = q_i . k_j / sqrt(d_h): how well query i matches key j
const attentionScores = (q, k) => q.map((qi) => k.map((kj) => dot(qi, kj) / Math.sqrt(qi.length)));

// A[i, :] = softmax over the keys j of S[i, j] (maths.js's softmax: the largest score first
// taken away); no key is padding here
const attentionWeights = (scores) => scores.map((row) => softmax(row));

// head(X) = A V  with  Q = X Wq^T + bq,  K = X Wk^T + bk,  V = X Wv^T + bv
function attentionHead(x, {Wq, bq, Wk, bk, Wv, bv}) {
  const q = linear(x, Wq, bq), k = linear(x, Wk, bk), v = linear(x, Wv, bv);  // (T, d_h)
  const scores = attentionScores(q, k), weights = attentionWeights(scores);  // (T, T)
  const out = weights.map((a) => v[0].map((_, c) => dot(a, v.map((row) => row[c]))));
  return {q, k, v, scores, weights, out};  // out: (T, d_h), row i = sum_j A[i, j] v_j
}

// the fused (3d, d) weight holds Wq, Wk, Wv one above the other; head h owns rows
// h*d_h .. (h+1)*d_h of each
function splitHeads(W, b, heads) {
  const d = W[0].length, dh = d / heads;
  return Array.from({length: heads}, (_, h) => {
    const rows = (part) => [part * d + h * dh, part * d + (h + 1) * dh];
    const [q, k, v] = [0, 1, 2].map(rows);
    return {Wq: W.slice(...q), bq: b.slice(...q), Wk: W.slice(...k), bk: b.slice(...k),
            Wv: W.slice(...v), bv: b.slice(...v)};
  });
}

// MultiHead(X) = [head_1(X), ..., head_H(X)] Wo^T + bo: the heads side by side, then mixed
function multiHead(x, {W_qkv, b_qkv, W_out, b_out, heads}) {
  const each = splitHeads(W_qkv, b_qkv, heads).map((w) => attentionHead(x, w));
  const joined = x.map((_, i) => each.flatMap((head) => head.out[i]));  // (T, d)
  return {heads: each, joined, out: linear(joined, W_out, b_out)};
}

// erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1 * 3 * ... * (2n+1)): every term of
// the sum is positive, so nothing cancels; past |x| = 6, erf is +-1 to 64-bit precision
function erf(x) {
  const a = Math.abs(x);
  if (a >= 6) return Math.sign(x);
  let term = a, total = a;
  for (let n = 1; term > total * 1e-17; n++) {
    term *= 2 * a * a / (2 * n + 1);
    total += term;
  }
  return Math.sign(x) * 2 / Math.sqrt(Math.PI) * Math.exp(-a * a) * total;
}

// GELU(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)): the exact form, not the tanh one
const gelu = (x) => x / 2 * (1 + erf(x / Math.SQRT2));

// FFN(x) = GELU(x W1^T + b1) W2^T + b2, row by row: d -> F -> d
function feedForward(x, {W1, b1, W2, b2}) {
  const pre = linear(x, W1, b1), act = pre.map((row) => row.map(gelu));  // (T, F)
  return {pre, act, out: linear(act, W2, b2)};  // out: (T, d)
}

const add = (x, y) => x.map((row, i) => row.map((v, c) => v + y[i][c]));

// X' = LN(X + MultiHead(X));  X'' = LN(X' + FFN(X'))   (post-LN, as in BERT)
function block(x, weights, layer) {
  const g = (name) => weights.tensors[`blocks.${layer}.${name}`];
  const eps = weights.config.layer_norm_eps;
  const attention = multiHead(x, {W_qkv: g("attention.qkv.weight"), b_qkv: g("attention.qkv.bias"),
                                  W_out: g("attention.out.weight"), b_out: g("attention.out.bias"),
                                  heads: weights.config.num_heads});
  const mid = layerNorm(add(x, attention.out), g("ln_attention.weight"), g("ln_attention.bias"),
                        eps);
  const ffn = feedForward(mid, {W1: g("ffn_in.weight"), b1: g("ffn_in.bias"),
                                W2: g("ffn_out.weight"), b2: g("ffn_out.bias")});
  const out = layerNorm(add(mid, ffn.out), g("ln_ffn.weight"), g("ln_ffn.bias"), eps);
  return {attention, after_attention: mid, ffn, out};
}

// s_v = w_v . LN(GELU(h D^T + c)) + b_v, for every word v at once: (T, d) -> (T, V), the
// decoder tied to the word embeddings
function mlmHead(h, weights) {
  const t = weights.tensors;
  const dense = linear(h, t["head_dense.weight"], t["head_dense.bias"]).map((r) => r.map(gelu));
  const transformed = layerNorm(dense, t["head_ln.weight"], t["head_ln.bias"],
                                weights.config.layer_norm_eps);
  return {transformed, logits: linear(transformed, t["word_embeddings.weight"], t.head_bias)};
}

// logits = head(block_L(... block_1(LN(embed(x))) ...)): the whole forward pass
function forward(weights, ids) {
  const t = weights.tensors;
  const summed = embed(ids, {word: t["word_embeddings.weight"],
                             position: t["position_embeddings.weight"],
                             segment: t["segment_embeddings.weight"]});  // (T, d)
  let x = layerNorm(summed, t["ln_embeddings.weight"], t["ln_embeddings.bias"],
                    weights.config.layer_norm_eps);
  const record = {sum: summed, embeddings: x, layers: []};
  for (let layer = 0; layer < weights.config.num_layers; layer++) {
    const rec = block(x, weights, layer);
    record.layers.push(rec);
    x = rec.out;
  }
  const head = mlmHead(x, weights);
  Object.assign(record, {h: x, head: head.transformed, logits: head.logits});
  const attention = record.layers.map((rec) => rec.attention.heads.map((hd) => hd.weights));
  return {logits: head.logits, attention, record};  // attention[layer][head]: (T, T)
}

const STAGES = {embed, layerNorm, attentionScores, attentionWeights, attentionHead, splitHeads,
                multiHead, erf, gelu, feedForward, block, mlmHead, forward};
