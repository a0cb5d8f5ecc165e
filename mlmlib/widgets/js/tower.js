/* tower.js - Step 6's live figure: choose the masked words and each one's P(truth); their
 * -log P stack into the loss.
 *
 * Does: a toggle button per word, a slider per hidden word (in the sentence's order), the row
 * the model reads and the tower of the slots' losses with their total. Settings
 * (mlmlib.widgets.live.live_tower): tokens, probs ({position: P} hidden at first), mask_token,
 * slot_names and blocks (a slider's and a block's name for each position), slot_slider (the
 * range and step of a slot's slider), new_p (where a word hidden later starts), decimals.
 *
 * Does not: name the slots or set the sliders' ranges itself (Python does, and its
 * slots_and_tower picture uses the same names); computes with maths.js's negLog and slotsLoss.
 */

KINDS.tower = {
  setup(fig) {
    const c = fig.config;
    fig.buttons = toggles(fig, {tokens: c.tokens, hidden: Object.keys(c.probs).map(Number)});
    fig.sliderBox = el(fig.controls, "div", {class: "mlm-sliders"});
    fig.sliders = {};
  },
  draw(fig) {
    const c = fig.config, hidden = pressed(fig.buttons);
    for (const [i, s] of Object.entries(fig.sliders)) {  // drop the sliders of revealed words
      if (!hidden.includes(Number(i))) { s.parentNode.remove(); delete fig.sliders[i]; }
    }
    for (const i of hidden) {  // a slider for each newly hidden word
      if (!fig.sliders[i]) {
        const value = c.probs[i] !== undefined ? c.probs[i] : c.new_p;
        fig.sliders[i] = slider(fig, Object.assign({}, c.slot_slider, {
          name: `p-${i}`, label: c.slot_names[i], value}), fig.sliderBox);
      }
    }
    hidden.forEach((i) => fig.sliderBox.appendChild(fig.sliders[i].parentNode));  // in order
    const probs = hidden.map((i) => Number(fig.sliders[i].value));
    const ctx = canvas(fig, {width: 560, height: 350});
    const reads = c.tokens.map((t, i) => (hidden.includes(i) ? c.mask_token : t));
    tokenRow(ctx, {x: 10, y: 6, size: Math.min(76, 540 / c.tokens.length), highlight: hidden,
                   q: "reads", tokens: reads});
    tower(ctx, {box: {x: 10, y: 90, h: 255}, name: "L", decimals: c.decimals,
                parts: hidden.map((i, k) => [i, c.blocks[i], negLog(probs[k])]),
                total: slotsLoss(probs)});
    if (!hidden.length) {
      label(ctx, {x: 10, y: 140, text: "M is empty: the sum has no terms, the loss is 0"});
    }
  },
};
