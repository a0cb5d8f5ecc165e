/* mount.js - puts the live figures on the page: each <div class="mlm-live"> becomes its
 * controls and its drawing, redrawn whenever a control moves.
 *
 * Does: read each figure's settings (its JSON), hide its static picture, set up its kind's
 * controls (KINDS, from the figure modules) and draw it; the text grows on a narrow screen,
 * where the drawing shrinks. Adds the figures' style sheet once (its colours are the figure's,
 * as CSS variables) and window.mlmLive: mountAll, the maths and the mini BERT (bertio.js's BERT)
 * (for tests/test_live_js.py and tests/test_live_bert.py).
 * The script runs again with every live output (Jupyter and Colab run each output's script);
 * once loaded, it only mounts the figures not mounted yet.
 *
 * Does not: compute or draw anything itself (the figure modules do).
 */

if (window.mlmLive) { window.mlmLive.mountAll(); return; }

const newId = (() => {  // an id for each figure mounted on this page (its hatch pattern's)
  let count = 0;
  return () => `mlm-live-${++count}`;
})();

function mount(root) {
  const config = JSON.parse(root.querySelector("script.mlm-config").textContent);
  const kind = KINDS[config.kind];
  if (!kind) return;
  root.setAttribute("data-mounted", "true");
  const c = config.colours;
  for (const [name, colour] of [["other", c.other], ["plain", c.box.plain], ["ink", c.ink],
                                ["pressed", c.pressed]]) {
    root.style.setProperty(`--mlm-${name}`, colour);
  }
  const fig = {config, uid: newId(), controls: el(root, "div", {class: "mlm-controls"}),
               picture: el(root, "div", {class: "mlm-picture"})};
  const say = el(root, "p", {class: "mlm-say", "aria-live": "polite"});
  const font = () => (root.clientWidth && root.clientWidth < 480 ? 18 : 13);
  fig.redraw = () => {
    fig.font = font();
    fig.picture.replaceChildren();
    kind.draw(fig);
    say.textContent = [...fig.picture.querySelectorAll("[data-say]")].map((n) => n.textContent)
      .join("; ");
    root.setAttribute("data-draws", String(Number(root.getAttribute("data-draws") || 0) + 1));
  };
  kind.setup(fig);
  const still = root.querySelector(".mlm-static");
  if (still) still.style.display = "none";
  fig.redraw();
  if (window.ResizeObserver) {  // a phone turned sideways: the text size follows
    new ResizeObserver(() => { if (font() !== fig.font) fig.redraw(); }).observe(root);
  }
}

function mountAll() {
  document.querySelectorAll(".mlm-live:not([data-mounted])").forEach(mount);
}

const style = document.createElement("style");
style.textContent = `
  .mlm-live { max-width: 640px; margin: 0.5em 0; }
  .mlm-live .mlm-svg { width: 100%; height: auto; display: block; color: inherit; }
  .mlm-live .mlm-controls { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em;
                            margin-bottom: 0.4em; }
  .mlm-live .mlm-sliders { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; width: 100%; }
  .mlm-live .mlm-control { display: flex; align-items: center; gap: 0.4em; font-size: 0.9em; }
  .mlm-live .mlm-control input[type=range] { width: 9em; }
  .mlm-live .mlm-wide, .mlm-live .mlm-wide input { flex: 1 1 100%; min-width: 0; }
  .mlm-live .mlm-wide input { font-size: 1em; padding: 0.2em; }
  .mlm-live .mlm-toggles { display: flex; flex-wrap: wrap; gap: 0.3em; width: 100%; }
  .mlm-live button { border: 1px solid var(--mlm-other); border-radius: 4px;
                     background: var(--mlm-plain); color: var(--mlm-ink); padding: 0.15em 0.5em;
                     cursor: pointer; }
  .mlm-live button[aria-pressed=true] { background: var(--mlm-pressed); color: white;
                                        border-color: var(--mlm-pressed); }
  .mlm-live select { font-size: 1em; max-width: 100%; }
  .mlm-live .mlm-message { font-weight: bold; margin: 0.4em 0; }
  .mlm-live .mlm-note { font-size: 0.9em; margin: 0.3em 0; }
  .mlm-live .mlm-say { position: absolute; width: 1px; height: 1px; overflow: hidden;
                       clip: rect(0 0 0 0); white-space: nowrap; }
`;
document.head.appendChild(style);
window.mlmLive = {mountAll, maths: MATHS, bert: BERT};
mountAll();
