/* bertio.js - what the mini BERT's forward pass (bert.js) reads and what the page shows of it:
 * the stored weights, decoded; a typed sentence, as token ids; the scores, as probabilities.
 *
 * Does: decode(blob) turns the stored model that Python sends (mlmlib.widgets.toy_model_blob:
 * JSON with the weight bytes in base64, little-endian float16 or float32) into 64-bit arrays
 * by the model's own tensor names, with its config and vocabulary; read(model, text, settings)
 * reads a typed sentence as the live posterior does (maths.js's readSentence and
 * sentenceError, the same rule and messages) and gives the token ids: [CLS], the words with
 * each blank as [MASK], [SEP]; wordProbs(model, scores) is the softmax over the toy world's
 * words only. BERT (window.mlmLive.bert) gathers these and bert.js's stages.
 *
 * Does not: check the bytes' checksum (Python does, before it sends them), fetch a file (the
 * weights travel inside the output), or name a token: the special tokens come with the model.
 */

// IEEE 754 half precision: sign, 5 exponent bits (bias 15), 10 fraction bits
function fromHalf(bits) {
  const sign = bits & 0x8000 ? -1 : 1, exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;  // zero and the subnormals
  if (exponent === 0x1f) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

const WIDTH = {float16: 2, float32: 4};

// the flat values of one tensor, row after row, shaped as nested arrays
function shaped(values, shape) {
  if (shape.length <= 1) return values;
  const step = values.length / shape[0];
  return Array.from({length: shape[0]},
                    (_, r) => shaped(values.slice(r * step, (r + 1) * step), shape.slice(1)));
}

function decode(blob) {
  const doc = typeof blob === "string" ? JSON.parse(blob) : blob;
  const text = atob(doc.weights), bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const view = new DataView(bytes.buffer), tensors = {};
  for (const {name, shape, dtype, offset} of doc.tensors) {
    const width = WIDTH[dtype], count = shape.reduce((a, b) => a * b, 1);
    if (!width || offset + count * width > bytes.length) {
      throw new Error(`tensor ${name}: ${dtype} values past the end of the weights`);
    }
    const values = Array.from({length: count}, (_, k) => (width === 2
      ? fromHalf(view.getUint16(offset + 2 * k, true)) : view.getFloat32(offset + 4 * k, true)));
    tensors[name] = shaped(values, shape);
  }
  const id = Object.fromEntries(doc.vocab.map((token, i) => [token, i]));
  return {config: doc.config, tensors, vocab: doc.vocab, id, special: doc.special,
          words: doc.vocab.slice(doc.words_from), wordsFrom: doc.words_from};
}

// A typed sentence: its words and blanks (the live posterior's reading and messages), and the
// model's token ids, or the error that the page shows instead. settings: {rule, example}, and
// maxLen where sentences must be shorter than the model reads ([CLS] and [SEP] aside).
function read(model, text, settings) {
  const {words, masked} = readSentence(text, settings.rule);
  const known = (w) => model.words.includes(w);
  const most = model.config.max_position - 2;
  const error = sentenceError({words, masked}, {known, maxLen: Math.min(most, settings.maxLen
                                                                        || most),
                                                blanks: settings.rule.blanks,
                                                example: settings.example});
  if (error) return {words, masked, ids: null, error};
  const s = model.special;
  const ids = [model.id[s.cls], ...words.map((w, i) => (masked.includes(i)
    ? model.id[s.mask] : model.id[w])), model.id[s.sep]];
  return {words, masked, ids, error: null};
}

// P(v) = softmax over the toy world's words of their scores (the special tokens left out)
const wordProbs = (model, scores) => softmax(scores.slice(model.wordsFrom));

const BERT = {...STAGES, fromHalf, decode, read, wordProbs};
