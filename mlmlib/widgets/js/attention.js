/* attention.js - where the stored mini BERT's attention goes: type a toy-world sentence with
 * blanks, pick a position, and see each layer's and each head's attention weights from it.
 *
 * Does: a text box (read and refused as the live posterior reads a sentence: bertio.js's
 * read) and a picker of the position the weights come from: the first blank (its first
 * choice, which follows the blank as the reader types) or any token, [CLS] and [SEP]
 * included. For each head of each layer, a panel of bars, one per token, as tall as the
 * weight the chosen position gives it (bert.js's forward: that position's row of
 * attention[layer][head], from 0 to 1), the chosen position's own bar hatched; the tokens
 * beneath. Each bar carries its weight (data-v) and its name, `att-${layer}-${head}:${key}`.
 * Settings (mlmlib.widgets.ask.live_attention): model (the stored weights, decoded once),
 * sentence, rule ({pattern, blanks}), labels ({query: the picker's, blank: its first
 * choice}), note (said under the drawing), decimals.
 *
 * Does not: say what the weights mean (the chapter does, with its caveat), run the model
 * itself (bert.js does; tests/test_live_ask.py checks the weights against MiniBert's), or hold
 * a label (they come in the settings).
 */

// The picker's choices for `tokens`, made again only when the tokens change: the first blank,
// then every position; a position picked before stays picked while the sentence has it.
function pickerChoices(fig, tokens) {
  const key = tokens.join(" ");
  if (fig.tokensKey === key) return;
  fig.tokensKey = key;
  const before = fig.pick.value;
  fig.pick.replaceChildren();
  el(fig.pick, "option", {value: "blank"}, fig.config.labels.blank);
  tokens.forEach((t, i) => el(fig.pick, "option", {value: String(i)}, `${t} (position ${i})`));
  const kept = before && before !== "blank" && Number(before) < tokens.length;
  fig.pick.value = kept ? before : "blank";
}

KINDS.attention = {
  setup(fig) {
    const c = fig.config;
    fig.model = decode(c.model);
    fig.text = sentenceBox(fig);
    const picker = el(fig.controls, "label", {class: "mlm-control"});
    el(picker, "span", {class: "mlm-control-name"}, c.labels.query);
    fig.pick = el(picker, "select", {"data-control": "query", "aria-label": c.labels.query});
    fig.pick.addEventListener("input", () => fig.redraw());
  },
  draw(fig) {
    const c = fig.config, model = fig.model;
    const got = read(model, fig.text.value, {rule: c.rule, example: c.sentence});
    fig.pick.disabled = Boolean(got.error);
    if (got.error) {  // HTML text, so that a long message wraps at any width
      el(fig.picture, "p", {class: "mlm-message", "data-q": "error", "data-say": 1}, got.error);
      return;
    }
    const tokens = got.ids.map((id) => model.vocab[id]);
    pickerChoices(fig, tokens);
    const query = fig.pick.value === "blank" ? got.masked[0] + 1 : Number(fig.pick.value);
    const panels = forward(model, got.ids).attention
      .flatMap((heads, l) => heads.map((weights, h) => [l, h, weights[query]]));
    // the page's layout: a margin for the first token's slanted name, a panel per head
    const F = fig.font, left = 2 * F, slot = (560 - left) / tokens.length, panel = 3 * F + 24;
    const longest = Math.max(...tokens.map((t) => t.length));
    const below = F + 12 + panels.length * panel;
    const ctx = canvas(fig, {width: 560, height: below + (longest / 2 + 2) * F});
    label(ctx, {x: 0, y: F + 2, text: `${c.labels.query} ${tokens[query]} (position ${query})`,
                bold: true, say: true});
    panels.forEach(([l, h, weights], n) => {
      const y = F + 12 + n * panel, base = y + panel - 4, tall = panel - F - 12;
      const most = weights.indexOf(Math.max(...weights));
      number(ctx, {x: left, y: y + F, name: `most-${l}-${h}`, value: weights[most],
                   decimals: c.decimals, size: -1,
                   prefix: `layer ${l + 1}, head ${h + 1}: most on '${tokens[most]}', `});
      weights.forEach((w, j) => el(ctx.svg, "rect", {
        x: left + (j + 0.15) * slot, y: base - w * tall, width: 0.7 * slot,
        height: Math.max(w * tall, 0.5), fill: j === query ? ctx.hatch : ctx.colours.other,
        stroke: "black", "stroke-width": 0.5, "data-q": `att-${l}-${h}:${j}`,
        "data-v": String(w)}));
      el(ctx.svg, "line", {x1: left, x2: 560, y1: base, y2: base, stroke: "currentColor",
                           "stroke-width": 0.5});
    });
    tokens.forEach((t, j) => label(ctx, {
      x: left + (j + 0.5) * slot + F / 3, y: below + 4, text: t, anchor: "end", rotate: -60,
      bold: j === query, q: `token-${j}`, attrs: j === query ? {fill: ctx.colours.truth} : {}}));
    el(fig.picture, "p", {class: "mlm-note"}, c.note);
  },
};
