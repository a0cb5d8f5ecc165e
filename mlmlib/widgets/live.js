/* mlmlib live figures: the "Try it" cells of the course, computed and drawn in the page.
 *
 * Each figure is a <div class="mlm-live"> holding its settings as JSON (written by
 * mlmlib/widgets/live.py) and a static picture for readers without JavaScript. This script
 * replaces the picture by controls and an SVG drawing, and redraws both whenever a control
 * moves. It needs no kernel and no network: the published site, Jupyter and Colab run it alike.
 *
 * Every number is computed here the way mlmlib computes it (softmax after subtracting the
 * largest score, -log p, sums, the toy world's scaled forward-backward), in 64-bit floats: it
 * agrees with mlmlib's to about 1e-15 (sums may be added in another order). Each number drawn
 * carries its full value in data-v and its name in data-q, which is how tests/test_site.py
 * compares the page with mlmlib; the lines marked data-say are read out to a screen reader.
 */
(function () {
  "use strict";
  if (window.mlmLive) { window.mlmLive.mountAll(); return; }

  // ------------------------------------------------------------------ the computations

  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  const negLog = (p) => 0 - Math.log(p);

  // softmax(s)_v = exp(s_v - m) / sum_u exp(s_u - m),  m = max_u s_u
  function softmax(scores) {
    const m = Math.max(...scores);
    const w = scores.map((s) => Math.exp(s - m));
    const z = sum(w);
    return w.map((x) => x / z);
  }

  // The toy world's exact posterior P(x_i = v | the visible words, the length), as
  // ToyWorld.posterior: scaled forward and backward messages, gamma = alpha * beta.
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
      if (t) a = world.start.map((_, s) => sum(alpha[t - 1].map((x, r) => x * world.trans[r][s])) * e[t][s]);
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

  // ------------------------------------------------------------------ drawing helpers

  const SVGNS = "http://www.w3.org/2000/svg";
  let FONT = 13;  // set before each drawing: larger on a phone, where the drawing shrinks

  function el(parent, tag, attrs, text) {
    const node = ["svg", "g", "rect", "line", "path", "text", "circle", "polyline", "pattern",
                  "defs", "tspan"].includes(tag)
      ? document.createElementNS(SVGNS, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  // A number drawn in the figure: shown rounded, its full value in data-v, its name in data-q.
  function number(parent, x, y, name, value, digits, attrs, prefix) {
    const shown = !Number.isFinite(value) ? "∞"
      : typeof digits === "function" ? digits(value) : (value + 0).toFixed(digits);
    return el(parent, "text", Object.assign({x, y, "data-q": name, "data-v": String(value),
                                             "font-size": FONT, fill: "currentColor"}, attrs || {}),
              (prefix || "") + shown);
  }

  function label(parent, x, y, text, attrs) {
    return el(parent, "text", Object.assign({x, y, "font-size": FONT, fill: "currentColor"},
                                            attrs || {}), text);
  }

  function canvas(fig, width, height) {
    const svg = el(fig.picture, "svg", {viewBox: `0 0 ${width} ${height}`, role: "img",
                                        "aria-label": fig.config.title, class: "mlm-svg"});
    const defs = el(svg, "defs");
    const hatch = el(defs, "pattern", {id: `${fig.uid}-hatch`, width: 6, height: 6,
                                       patternUnits: "userSpaceOnUse",
                                       patternTransform: "rotate(45)"});
    el(hatch, "rect", {width: 6, height: 6, fill: fig.config.colours.truth});
    el(hatch, "line", {x1: 0, y1: 0, x2: 0, y2: 6, stroke: "black", "stroke-width": 1.2});
    return svg;
  }

  // One bar chart panel: bars on a zero line, each value above (or below) its bar.
  function bars(fig, svg, box, names, values, truth, digits, ylabel, title, q) {
    const {x, y, w, h} = box;
    label(svg, x, y + 12, title, {"font-weight": "bold"});
    const top = y + 24, height = h - 44;
    const low = Math.min(0, ...values), high = Math.max(0, ...values);
    const pad = 0.25 * ((high - low) || 1);
    const lo = low - (low < 0 ? pad : 0), hi = high + pad;
    const Y = (v) => top + height * (hi - v) / (hi - lo);
    const left = x + 48, slot = (w - 52) / names.length;
    el(svg, "text", {x: x + 10, y: top + height / 2, "font-size": FONT - 1, fill: "currentColor",
                     transform: `rotate(-90 ${x + 10} ${top + height / 2})`,
                     "text-anchor": "middle"}, ylabel);
    values.forEach((v, i) => {
      const bx = left + i * slot + slot * 0.15, bw = slot * 0.7;
      const isTruth = i === truth;
      el(svg, "rect", {x: bx, y: Math.min(Y(v), Y(0)), width: bw,
                       height: Math.max(Math.abs(Y(v) - Y(0)), 0.5),
                       fill: isTruth ? `url(#${fig.uid}-hatch)` : fig.config.colours.other,
                       stroke: "black", "stroke-width": 0.6, "data-bar": `${q}:${names[i]}`});
      number(svg, bx + bw / 2, v >= 0 ? Y(v) - 4 : Y(v) + FONT + 2, `${q}:${names[i]}`, v,
             digits, {"text-anchor": "middle", "font-size": FONT - 1});
      label(svg, bx + bw / 2, y + h - 4, names[i], {"text-anchor": "middle"});
    });
    el(svg, "line", {x1: left, x2: x + w, y1: Y(0), y2: Y(0), stroke: "currentColor"});
  }

  function slider(fig, name, text, min, max, step, value, format, parent) {
    const row = el(parent || fig.controls, "label", {class: "mlm-control"});
    el(row, "span", {class: "mlm-control-name"}, text);
    const input = el(row, "input", {type: "range", min, max, step, value: String(value),
                                    "data-control": name, "aria-label": text});
    const shown = el(row, "output", {}, format(Number(input.value)));
    input.addEventListener("input", () => {
      shown.textContent = format(Number(input.value));
      fig.redraw();
    });
    return input;
  }

  function toggles(fig, tokens, hidden) {
    const row = el(fig.controls, "div", {class: "mlm-toggles"});
    return tokens.map((t, i) => {
      const button = el(row, "button", {type: "button", "data-control": `token-${i}`,
                                        "aria-pressed": String(hidden.includes(i))},
                        `${i + 1}: ${t}`);
      button.addEventListener("click", () => {
        button.setAttribute("aria-pressed",
                            String(button.getAttribute("aria-pressed") !== "true"));
        fig.redraw();
      });
      return button;
    });
  }

  const pressed = (buttons) => buttons.map((b, i) => (b.getAttribute("aria-pressed") === "true" ? i : -1))
    .filter((i) => i >= 0);

  // A row of token boxes: covered ones dark with "?", highlighted ones hatched.
  function tokenRow(fig, svg, x, y, size, tokens, opts) {
    tokens.forEach((t, i) => {
      const bx = x + i * size, marked = (opts.highlight || []).includes(i);
      el(svg, "rect", {x: bx + 3, y: y + 3, width: size - 6, height: size - 6, rx: 6,
                       fill: marked ? "#FBE3D6" : "#E8F1F8",
                       stroke: marked ? fig.config.colours.truth : fig.config.colours.other,
                       "stroke-width": marked ? 1.8 : 1});
      if ((opts.covered || []).includes(i)) {
        el(svg, "rect", {x: bx + 7, y: y + 7, width: size - 14, height: size - 14, rx: 5,
                         fill: "#4D4D4D"});
      }
      el(svg, "text", {x: bx + size / 2, y: y + size / 2 + 5, "text-anchor": "middle",
                       "font-size": t.length > 6 ? FONT - 3 : FONT, "data-q": `${opts.q}-${i}`,
                       fill: (opts.covered || []).includes(i) ? "white" : "#111",
                       "font-weight": marked ? "bold" : "normal"}, t);
    });
  }

  // y = -log p on [pMin, 1], linear or logarithmic in p, inside box; returns the mappings.
  function curve(fig, svg, box, pMin, logX, points) {
    const {x, y, w, h} = box;
    const left = x + 52, bottom = y + h - 36, right = x + w - 10, top = y + 10;
    const yMax = negLog(pMin) * 1.08;
    const X = logX ? (p) => left + (right - left) * (Math.log10(p) - Math.log10(pMin)) / (-Math.log10(pMin))
      : (p) => left + (right - left) * (p - pMin) / (1 - pMin);
    const Y = (v) => bottom - (bottom - top) * v / yMax;
    const path = [];
    for (let k = 0; k <= 200; k++) {
      const p = logX ? Math.pow(10, Math.log10(pMin) * (1 - k / 200)) : pMin + (1 - pMin) * k / 200;
      path.push(`${X(p).toFixed(2)},${Y(negLog(p)).toFixed(2)}`);
    }
    el(svg, "polyline", {points: path.join(" "), fill: "none", stroke: fig.config.colours.other,
                         "stroke-width": 2.4});
    el(svg, "line", {x1: left, x2: right, y1: bottom, y2: bottom, stroke: "currentColor"});
    el(svg, "line", {x1: left, x2: left, y1: top, y2: bottom, stroke: "currentColor"});
    const ticks = logX ? [-12, -9, -6, -3, 0].filter((e) => Math.pow(10, e) >= pMin)
      .map((e) => [parseFloat(`1e${e}`), e === 0 ? "1" : `10^${e}`])
      : [0, 0.25, 0.5, 0.75, 1].map((p) => [Math.max(p, pMin), String(p)]);
    for (const [p, text] of ticks) {
      el(svg, "line", {x1: X(p), x2: X(p), y1: bottom, y2: bottom + 4, stroke: "currentColor"});
      label(svg, X(p), bottom + 17, text, {"text-anchor": "middle", "font-size": FONT - 1});
    }
    const step = yMax > 20 ? 10 : yMax > 8 ? 2 : 1;
    for (let v = 0; v <= yMax; v += step) {
      label(svg, left - 6, Y(v) + 4, String(v), {"text-anchor": "end", "font-size": FONT - 1});
    }
    label(svg, (left + right) / 2, y + h - 4, "p, the probability given to the true word" +
          (logX ? " (log scale)" : ""), {"text-anchor": "middle"});
    el(svg, "text", {x: x + 12, y: (top + bottom) / 2, "font-size": FONT, fill: "currentColor",
                     transform: `rotate(-90 ${x + 12} ${(top + bottom) / 2})`,
                     "text-anchor": "middle"}, "loss  −log p");
    for (const [name, p] of points) {
      el(svg, "circle", {cx: X(p), cy: Y(negLog(p)), r: 5, fill: fig.config.colours.truth,
                         "data-point": name});
      const nearRight = X(p) > right - 90;
      label(svg, X(p) + (nearRight ? -8 : 8), Y(negLog(p)) - 8, name,
            {"text-anchor": nearRight ? "end" : "start", "font-weight": "bold",
             "font-size": FONT - 1});
    }
  }

  // One stacked bar: a block per part (the masked slots), the total on top.
  // parts: [[key, label, value], ...]; a label sits beside its block, or higher when the
  // blocks below are too thin to keep the labels apart (a line joins it to its block).
  function tower(fig, svg, box, parts, totalName) {
    const {x, y, h} = box;
    const total = sum(parts.map(([, , v]) => v));
    const top = y + 26, bottom = y + h - 6, scale = (bottom - top) / (total > 0 ? total * 1.02 : 1);
    const palette = fig.config.colours.palette;
    let at = bottom, free = bottom + FONT;
    parts.forEach(([key, name, v], k) => {
      const height = v * scale, middle = at - height / 2;
      const ly = Math.min(middle + FONT / 3, free - FONT - 3);
      free = ly;
      el(svg, "rect", {x: x + 10, y: at - height, width: 70, height: Math.max(height, 0.5),
                       fill: palette[k % palette.length], stroke: "black", "stroke-width": 0.6});
      el(svg, "line", {x1: x + 80, y1: middle, x2: x + 92, y2: ly - FONT / 3, stroke: "currentColor",
                       "stroke-width": 0.6});
      number(svg, x + 96, ly, `part:${key}`, v, 4, {}, `${name} = `);
      at -= height;
    });
    number(svg, x + 10, y + 16, totalName, total, 4, {"font-weight": "bold", "data-say": 1},
           "total loss = ");
    return total;
  }

  // ------------------------------------------------------------------ the figures

  const KINDS = {};

  // Steps 1 and 2: click words to hide them; the model reads [MASK] there and must produce them.
  KINDS.mask = {
    setup(fig) { fig.buttons = toggles(fig, fig.config.tokens, fig.config.hidden); },
    draw(fig) {
      const c = fig.config, hidden = pressed(fig.buttons), size = 76;
      const svg = canvas(fig, Math.max(560, size * c.tokens.length + 20), 250);
      el(svg, "text", {x: 10, y: 22, "font-size": FONT + 2, "font-weight": "bold",
                       fill: "currentColor", "data-q": "M", "data-v": JSON.stringify(hidden.map((i) => i + 1))},
         hidden.length ? `M = {${hidden.map((i) => i + 1).join(", ")}}` : "M = {} (empty)")
        .setAttribute("data-say", 1);
      label(svg, 10, 50, "the model reads  x without M");
      tokenRow(fig, svg, 10, 58, size, c.tokens.map((t, i) => (hidden.includes(i) ? c.mask_token : t)),
               {covered: [], highlight: hidden, q: "reads"});
      label(svg, 10, 160, "it must produce the hidden words  x_i, i in M");
      tokenRow(fig, svg, 10, 168, size, c.tokens.map((t, i) => (hidden.includes(i) ? t : "")),
               {highlight: hidden, q: "answers"});
    },
  };

  // Step 3: the probability of the truth as a dial; the other words share the rest.
  KINDS.dial = {
    setup(fig) {
      fig.p = slider(fig, "p", fig.config.label, 0, 1, 0.001, fig.config.p, (v) => v.toFixed(3));
    },
    draw(fig) {
      const c = fig.config, p = Number(fig.p.value);
      const svg = canvas(fig, 420, 270), cx = 210, cy = 170, r = 120;
      const arc = (a0, a1, colour) => {
        const pt = (t) => [cx + r * Math.cos(Math.PI * (1 - t)), cy - r * Math.sin(Math.PI * (1 - t))];
        const [x0, y0] = pt(a0), [x1, y1] = pt(a1);
        el(svg, "path", {d: `M ${x0} ${y0} A ${r} ${r} 0 0 1 ${x1} ${y1}`, fill: "none",
                         stroke: colour, "stroke-width": 16});
      };
      arc(0, 0.5, c.colours.bands[0]); arc(0.5, 0.8, c.colours.bands[1]); arc(0.8, 1, c.colours.bands[2]);
      for (const t of [0, 0.25, 0.5, 0.75, 1]) {
        const a = Math.PI * (1 - t);
        label(svg, cx + 1.2 * r * Math.cos(a), cy - 1.2 * r * Math.sin(a) + 4, String(t),
              {"text-anchor": "middle", "font-size": FONT - 1});
      }
      const a = Math.PI * (1 - p);
      el(svg, "line", {x1: cx, y1: cy, x2: cx + 0.85 * r * Math.cos(a), y2: cy - 0.85 * r * Math.sin(a),
                       stroke: "currentColor", "stroke-width": 3, "data-needle": String(p)});
      el(svg, "circle", {cx, cy, r: 5, fill: "currentColor"});
      number(svg, cx, cy + 34, "p", p, 4, {"text-anchor": "middle", "font-weight": "bold", "data-say": 1},
             `${c.label} = `);
      number(svg, cx, cy + 56, "rest", 1 - p, 4, {"text-anchor": "middle"},
             "every other word together: 1 − P = ");
    },
  };

  // Step 4: scores -> exp(score) -> probabilities, with Z and -log P(truth).
  KINDS.softmax = {
    setup(fig) {
      const c = fig.config;
      fig.scores = c.words.map((w, i) => slider(fig, `score-${i}`, `score(${w})`,
                                                Math.min(-5, Math.floor(c.scores[i])),
                                                Math.max(5, Math.ceil(c.scores[i])),
                                                0.1, c.scores[i], (v) => v.toFixed(1)));
    },
    draw(fig) {
      const c = fig.config, s = fig.scores.map((x) => Number(x.value));
      const w = s.map(Math.exp), z = sum(w), p = softmax(s), t = c.words.indexOf(c.truth);
      const svg = canvas(fig, 560, 715);
      bars(fig, svg, {x: 0, y: 0, w: 560, h: 200}, c.words, s, t, 1, "score", "1. raw scores s_v", "score");
      bars(fig, svg, {x: 0, y: 215, w: 560, h: 200}, c.words, w, t, 4, "exp(score)",
           "2. exponentiate: every weight positive", "exp");
      number(svg, 48, 438, "Z", z, 4, {}, "their total Z = ");
      bars(fig, svg, {x: 0, y: 455, w: 560, h: 200}, c.words, p, t, 4, "probability",
           "3. divide by Z: probabilities that sum to 1", "prob");
      if (t >= 0) {
        number(svg, 10, 690, "truth", p[t], 4, {"font-weight": "bold", "data-say": 1},
               `the true word is '${c.truth}' (hatched): P(${c.truth}) = `);
      }
    },
  };

  // Step 5: -log p, the badness of a guess, with the reader's p on the curve.
  KINDS.neglog = {
    setup(fig) {
      fig.p = slider(fig, "p", "P(truth)", 0.001, 1, 0.001, fig.config.p, (v) => v.toFixed(3));
    },
    draw(fig) {
      const c = fig.config, p = Number(fig.p.value);
      const svg = canvas(fig, 600, 420);
      const points = [...Object.entries(c.points), ["your p", p]];
      curve(fig, svg, {x: 0, y: 0, w: 600, h: 340}, 0.001, false, points);
      number(svg, 10, 372, "loss", negLog(p), 4, {"font-weight": "bold", "data-say": 1},
             `your p = ${p.toFixed(3)}:  −log p = `);
      label(svg, 10, 396, Object.entries(c.points).map(([n, q]) => `${n}: ${negLog(q).toFixed(4)}`)
        .join("   "), {"font-size": FONT - 1});
    },
  };

  // "P(x₂ = fat)": the position tells apart a word that occurs twice ("the").
  const SUB = "₀₁₂₃₄₅₆₇₈₉";
  const slotName = (tokens, i) => `P(x${String(i + 1).replace(/\d/g, (d) => SUB[d])} = ${tokens[i]})`;

  // Step 6: choose the masked words and each one's P(truth); the -logs stack into the loss.
  KINDS.tower = {
    setup(fig) {
      const c = fig.config, hidden = Object.keys(c.probs).map(Number);
      fig.buttons = toggles(fig, c.tokens, hidden);
      fig.sliderBox = el(fig.controls, "div", {class: "mlm-sliders"});
      fig.sliders = {};
    },
    draw(fig) {
      const c = fig.config, hidden = pressed(fig.buttons);
      for (const [i, s] of Object.entries(fig.sliders)) {  // drop sliders of revealed words
        if (!hidden.includes(Number(i))) { s.parentNode.remove(); delete fig.sliders[i]; }
      }
      for (const i of hidden) {  // a slider for each newly hidden word
        if (!fig.sliders[i]) {
          fig.sliders[i] = slider(fig, `p-${i}`, slotName(c.tokens, i), 0.001, 1, 0.001,
                                  c.probs[i] !== undefined ? c.probs[i] : 0.5, (v) => v.toFixed(3),
                                  fig.sliderBox);
        }
      }
      hidden.forEach((i) => fig.sliderBox.appendChild(fig.sliders[i].parentNode));  // in order
      const svg = canvas(fig, 560, 350);
      const parts = hidden.map((i) => [i, `−log ${slotName(c.tokens, i)}`,
                                       negLog(Number(fig.sliders[i].value))]);
      tokenRow(fig, svg, 10, 6, Math.min(76, 540 / c.tokens.length),
               c.tokens.map((t, i) => (hidden.includes(i) ? c.mask_token : t)),
               {highlight: hidden, q: "reads"});
      tower(fig, svg, {x: 10, y: 90, w: 540, h: 255}, parts, "L");
      if (!hidden.length) label(svg, 10, 140, "M is empty: the sum has no terms, the loss is 0");
    },
  };

  // Step 7: k masked slots, each giving the truth P: the loss k * (-log P) at its extremes.
  KINDS.edge = {
    setup(fig) {
      const c = fig.config;
      fig.k = slider(fig, "k", "masked slots |M|", 0, 5, 1, c.k, (v) => String(v));
      fig.e = slider(fig, "log10p", "P(truth) = 10^", -12, 0, 0.5, c.log10p, (v) => v.toFixed(1));
    },
    draw(fig) {
      const k = Number(fig.k.value), p = Math.pow(10, Number(fig.e.value));
      const svg = canvas(fig, 600, 440);
      curve(fig, svg, {x: 0, y: 0, w: 600, h: 330}, 1e-12, true, [["each slot", p]]);
      number(svg, 10, 356, "p", p, (v) => `1 in ${Math.round(1 / v).toLocaleString("en")}`, {},
             "P(truth) = ");
      number(svg, 10, 378, "slot", negLog(p), 4, {}, "one slot: −log P = ");
      const loss = sum(new Array(k).fill(negLog(p)));
      number(svg, 10, 402, "loss", loss, 4, {"font-weight": "bold", "data-say": 1},
             `${k} slot(s): loss = `);
      const why = k === 0 ? "A. M is empty: a sum with no terms is 0"
        : p === 1 ? "B. perfect: −log 1 = 0 at every slot"
          : p < 0.01 ? "C. P near 0: each slot's loss climbs without limit" : "an ordinary guess";
      el(svg, "text", {x: 10, y: 428, "font-size": FONT, fill: "currentColor", "font-weight": "bold",
                       "data-q": "case", "data-say": 1}, why);
    },
  };

  // The toy world: type a sentence with blanks (___) and read the exact posterior of each.
  KINDS.posterior = {
    setup(fig) {
      const row = el(fig.controls, "label", {class: "mlm-control mlm-wide"});
      el(row, "span", {class: "mlm-control-name"}, "sentence (___ for a blank)");
      fig.text = el(row, "input", {type: "text", value: fig.config.sentence, "data-control": "sentence",
                                   spellcheck: "false", "aria-label": "sentence with blanks"});
      fig.text.addEventListener("input", () => fig.redraw());
    },
    draw(fig) {
      const c = fig.config;
      const words = fig.text.value.toLowerCase().replace(/\./g, " . ").split(/\s+/).filter(Boolean);
      const masked = words.map((w, i) => (c.blanks.includes(w) ? i : -1)).filter((i) => i >= 0);
      let error = null, post = [];
      const unknown = words.find((w) => !c.blanks.includes(w) && !Object.prototype.hasOwnProperty.call(c.world.word_id, w));
      if (!words.length) error = "type a sentence, e.g. " + c.sentence;
      else if (unknown) error = `'${unknown}' is not a word of the toy world`;
      else if (words.length > c.world.max_len) {
        error = `the toy world's sentences have 1 to max_len = ${c.world.max_len} words, this one ${words.length}`;
      } else if (!masked.length) error = "no blank: write ___ where a word is hidden";
      else {
        try { post = posterior(c.world, words, masked); } catch (err) { error = err.message; }
      }
      if (error) {  // HTML text, so that a long message wraps at any width
        el(fig.picture, "p", {class: "mlm-message", "data-q": "error", "data-say": 1}, error);
        return;
      }
      const rows = c.top, svg = canvas(fig, 560, 40 + masked.length * (rows * 24 + 40));
      post.forEach((probs, k) => {
        const top = probs.map((p, v) => [p, v]).filter(([p]) => p > 0)  // never a ruled-out word
          .sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, rows);
        const y0 = 20 + k * (rows * 24 + 40);
        label(svg, 10, y0, `blank ${k + 1} (word ${masked[k] + 1}): its likeliest words`,
              {"font-weight": "bold", "data-say": 1});
        top.forEach(([p, v], r) => {
          const y = y0 + 12 + r * 24, name = c.world.words[v];
          label(svg, 110, y + 15, name, {"text-anchor": "end"});
          el(svg, "rect", {x: 118, y: y + 2, width: Math.max(360 * p / top[0][0], 0.5), height: 18,
                           fill: c.colours.other, stroke: "black", "stroke-width": 0.5});
          number(svg, 124 + 360 * p / top[0][0], y + 15, `post-${k}:${name}`, p, 3);
        });
      });
    },
  };

  // ------------------------------------------------------------------ mounting

  let count = 0;

  function mount(root) {
    const config = JSON.parse(root.querySelector("script.mlm-config").textContent);
    const kind = KINDS[config.kind];
    if (!kind) return;
    root.setAttribute("data-mounted", "true");
    const fig = {config, uid: `mlm-live-${++count}`, controls: el(root, "div", {class: "mlm-controls"}),
                 picture: el(root, "div", {class: "mlm-picture"})};
    const say = el(root, "p", {class: "mlm-say", "aria-live": "polite"});
    const font = () => (root.clientWidth && root.clientWidth < 480 ? 18 : 13);
    fig.redraw = () => {
      FONT = fig.font = font();
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
    .mlm-live .mlm-controls { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; margin-bottom: 0.4em; }
    .mlm-live .mlm-sliders { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; width: 100%; }
    .mlm-live .mlm-control { display: flex; align-items: center; gap: 0.4em; font-size: 0.9em; }
    .mlm-live .mlm-control input[type=range] { width: 9em; }
    .mlm-live .mlm-wide, .mlm-live .mlm-wide input { flex: 1 1 100%; min-width: 0; }
    .mlm-live .mlm-wide input { font-size: 1em; padding: 0.2em; }
    .mlm-live .mlm-toggles { display: flex; flex-wrap: wrap; gap: 0.3em; width: 100%; }
    .mlm-live button { border: 1px solid #0072B2; border-radius: 4px; background: #E8F1F8;
                       color: #111; padding: 0.15em 0.5em; cursor: pointer; }
    .mlm-live button[aria-pressed=true] { background: #A63F00; color: white; border-color: #A63F00; }
    .mlm-live .mlm-message { font-weight: bold; margin: 0.4em 0; }
    .mlm-live .mlm-say { position: absolute; width: 1px; height: 1px; overflow: hidden;
                         clip: rect(0 0 0 0); white-space: nowrap; }
  `;
  document.head.appendChild(style);
  window.mlmLive = {mountAll, softmax, negLog, posterior};
  mountAll();
})();
