/* mask.js - Steps 1 and 2's live figure: click words to hide them; the model reads the mask
 * token there and must produce the hidden words.
 *
 * Does: a toggle button per word, and a drawing of M, the row the model reads and the row of
 * the words it must produce. Settings (mlmlib.widgets.live.live_mask): tokens, hidden (the
 * positions hidden at first), mask_token, rows (the two rows' titles).
 *
 * Does not: hold the rows' titles or colours (Python's reads_and_answers draws with the same).
 */

KINDS.mask = {
  setup(fig) {
    fig.buttons = toggles(fig, {tokens: fig.config.tokens, hidden: fig.config.hidden});
  },
  draw(fig) {
    const c = fig.config, hidden = pressed(fig.buttons), size = 76;
    const ctx = canvas(fig, {width: Math.max(560, size * c.tokens.length + 20), height: 250});
    const named = hidden.map((i) => i + 1);
    label(ctx, {x: 10, y: 22, size: 2, bold: true, q: "M", say: true,
                attrs: {"data-v": JSON.stringify(named)},
                text: hidden.length ? `M = {${named.join(", ")}}` : "M = {} (empty)"});
    label(ctx, {x: 10, y: 50, text: c.rows[0]});
    tokenRow(ctx, {x: 10, y: 58, size, highlight: hidden, q: "reads",
                   tokens: c.tokens.map((t, i) => (hidden.includes(i) ? c.mask_token : t))});
    label(ctx, {x: 10, y: 160, text: c.rows[1]});
    tokenRow(ctx, {x: 10, y: 168, size, highlight: hidden, q: "answers",
                   tokens: c.tokens.map((t, i) => (hidden.includes(i) ? t : ""))});
  },
};
