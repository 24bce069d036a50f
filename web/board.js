// xqtb web page: the SVG board. Defines window.XQBoard. Needs xiangqi.js and glyphs.js.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const C = 64; // distance between points
  const M = 58; // margin: piece radius + room for the coordinates
  const W = 8 * C + 2 * M;
  const H = 9 * C + 2 * M;
  const R = 28; // piece radius

  function el(name, attrs, parent, text) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // A character drawn as a <path> from glyphs.js (the page's own glyphs: no CJK font needed),
  // `size` px per em, its em box centred on (x, y); the character itself is its accessible name.
  // A character without an outline falls back to <text> in the page's CJK font.
  function glyph(ch, x, y, size, cls, parent) {
    const d = window.XQGlyphs && XQGlyphs.outlines[ch];
    if (!d) {
      return el("text", { x, y, class: `${cls} glyph-text`, "font-size": size, "data-char": ch }, parent, ch);
    }
    const k = +(size / XQGlyphs.em).toFixed(5);
    return el("path", {
      d, class: cls, transform: `translate(${x} ${y}) scale(${k})`,
      role: "img", "aria-label": ch, "data-char": ch,
    }, parent);
  }

  class XQBoard {
    // svg: an empty <svg> element; onSquare(square) is called when a point is clicked.
    constructor(svg, onSquare) {
      this.svg = svg;
      this.onSquare = onSquare;
      this.flipped = false;
      svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
      svg.setAttribute("xmlns", NS);
      const defs = el("defs", {}, svg);
      const glow = el("radialGradient", { id: "xq-check" }, defs);
      el("stop", { offset: "0%", "stop-color": "#ff2a1a", "stop-opacity": "0.95" }, glow);
      el("stop", { offset: "55%", "stop-color": "#ff2a1a", "stop-opacity": "0.55" }, glow);
      el("stop", { offset: "100%", "stop-color": "#ff2a1a", "stop-opacity": "0" }, glow);
      const face = el("radialGradient", { id: "xq-face", cx: "40%", cy: "35%", r: "75%" }, defs);
      el("stop", { offset: "0%", "stop-color": "#fff6e2" }, face);
      el("stop", { offset: "100%", "stop-color": "#ecd3a0" }, face);
      for (const cat of ["win", "draw", "loss"]) {
        const m = el("marker", {
          id: `xq-head-${cat}`, viewBox: "0 0 10 10", refX: "5", refY: "5",
          markerWidth: "3.2", markerHeight: "3.2", orient: "auto-start-reverse",
        }, defs);
        el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: `arrow-head ${cat}` }, m);
      }
      this.gGrid = el("g", { class: "grid" }, svg);
      this.gMarks = el("g", { class: "marks" }, svg);
      this.gPieces = el("g", { class: "pieces" }, svg);
      this.gOverlay = el("g", { class: "overlay", "pointer-events": "none" }, svg);
      this.gHits = el("g", { class: "hits" }, svg);
      this.hits = {};
      for (let f = 0; f < 9; f++) {
        for (let r = 0; r < 10; r++) {
          const s = XQ.sq(f, r);
          this.hits[s] = el("circle", {
            r: C / 2, class: "hit", "data-square": s, "data-testid": `pt-${s}`,
          }, this.gHits);
        }
      }
      svg.addEventListener("click", (ev) => {
        const t = ev.target.closest("[data-square]");
        if (t) this.onSquare(t.getAttribute("data-square"));
      });
      this.state = {};
      this.drawGrid();
    }

    xy(s) {
      const f = XQ.fileOf(s);
      const r = XQ.rankOf(s);
      const col = this.flipped ? 8 - f : f;
      const row = this.flipped ? r : 9 - r;
      return [M + col * C, M + row * C];
    }

    setFlipped(flipped) {
      this.flipped = !!flipped;
      this.drawGrid();
      this.render(this.state);
    }

    drawGrid() {
      const g = this.gGrid;
      g.textContent = "";
      el("rect", { x: 0, y: 0, width: W, height: H, rx: 14, class: "wood" }, g);
      el("rect", { x: M - 7, y: M - 7, width: 8 * C + 14, height: 9 * C + 14, class: "frame" }, g);
      const x0 = M;
      const x1 = M + 8 * C;
      const lines = [];
      for (let row = 0; row < 10; row++) lines.push(`M${x0} ${M + row * C}H${x1}`);
      for (let col = 0; col < 9; col++) {
        const x = M + col * C;
        if (col === 0 || col === 8) lines.push(`M${x} ${M}V${M + 9 * C}`);
        else lines.push(`M${x} ${M}V${M + 4 * C}M${x} ${M + 5 * C}V${M + 9 * C}`);
      }
      // palaces (files d-f, rows 0-2 and 7-9 of the drawing: symmetric, so flipping changes nothing)
      for (const top of [0, 7]) {
        const a = M + 3 * C;
        const b = M + 5 * C;
        const y0 = M + top * C;
        const y1 = y0 + 2 * C;
        lines.push(`M${a} ${y0}L${b} ${y1}M${b} ${y0}L${a} ${y1}`);
      }
      el("path", { d: lines.join(""), class: "lines" }, g);
      // position marks of the cannons and pawns
      const marks = [];
      const mark = (col, row) => {
        const x = M + col * C;
        const y = M + row * C;
        const d = 5;
        const l = 12;
        for (const sx of [-1, 1]) {
          if ((col === 0 && sx < 0) || (col === 8 && sx > 0)) continue;
          for (const sy of [-1, 1]) {
            marks.push(`M${x + sx * (d + l)} ${y + sy * d}H${x + sx * d}V${y + sy * (d + l)}`);
          }
        }
      };
      for (const row of [2, 7]) { mark(1, row); mark(7, row); }
      for (const row of [3, 6]) for (const col of [0, 2, 4, 6, 8]) mark(col, row);
      el("path", { d: marks.join(""), class: "marks-lines" }, g);
      // river
      const ry = M + 4.5 * C;
      for (const [cx, text] of [[M + 2 * C, "楚河"], [M + 6 * C, "漢界"]]) {
        const river = el("g", { class: "river" }, g);
        glyph(text[0], cx - C / 2, ry, 35, "river-char", river);
        glyph(text[1], cx + C / 2, ry, 35, "river-char", river);
      }
      // coordinates (ICCS): files along the bottom, ranks along the left
      for (let f = 0; f < 9; f++) {
        const col = this.flipped ? 8 - f : f;
        el("text", { x: M + col * C, y: H - 14, class: "coord" }, g, XQ.FILES[f]);
      }
      for (let r = 0; r < 10; r++) {
        const row = this.flipped ? r : 9 - r;
        el("text", { x: 20, y: M + row * C, class: "coord" }, g, String(r));
      }
      for (const [s, c] of Object.entries(this.hits)) {
        const [x, y] = this.xy(s);
        c.setAttribute("cx", x);
        c.setAttribute("cy", y);
      }
    }

    // state: {pos, selected, targets: {square: category for the mover}, lastMove, check, arrow: {iccs, cat}}
    render(state) {
      this.state = state || {};
      const { pos, selected, targets = {}, lastMove, check, arrow, movable = {} } = this.state;
      this.gMarks.textContent = "";
      this.gPieces.textContent = "";
      this.gOverlay.textContent = "";
      if (!pos) return;
      if (lastMove) {
        for (const s of [lastMove.slice(0, 2), lastMove.slice(2, 4)]) this.corners(s, "last");
      }
      if (check) {
        const [x, y] = this.xy(check);
        el("circle", { cx: x, cy: y, r: R + 12, fill: "url(#xq-check)", class: "check" }, this.gMarks);
      }
      for (const [s, p] of Object.entries(pos.board)) {
        const [x, y] = this.xy(s);
        const red = XQ.isRed(p);
        const cls = ["piece", red ? "red" : "black"];
        if (s === selected) cls.push("selected");
        const g = el("g", {
          class: cls.join(" "), transform: `translate(${x} ${y})`,
          "data-testid": `piece-${s}`, "data-square": s, "data-piece": p,
        }, this.gPieces);
        el("title", {}, g, `${red ? "Red" : "Black"} ${XQ.NAMES[p.toUpperCase()]} on ${s}`);
        el("circle", { r: R, cy: 2.5, class: "shadow" }, g);
        el("circle", { r: R, class: "body" }, g);
        el("circle", { r: R - 4.5, class: "ring" }, g);
        glyph(XQ.CHARS[p], 0, 1, 33, "char", g);
      }
      if (selected) this.corners(selected, "sel");
      for (const [s, cat] of Object.entries(targets)) {
        const [x, y] = this.xy(s);
        if (pos.board[s]) {
          el("circle", { cx: x, cy: y, r: R + 3, class: `target capture ${cat}` }, this.gOverlay);
        } else {
          el("circle", { cx: x, cy: y, r: 9, class: `target ${cat}` }, this.gOverlay);
        }
      }
      if (arrow) this.drawArrow(arrow.iccs, arrow.cat);
      for (const [s, c] of Object.entries(this.hits)) {
        c.classList.toggle("clickable", !!(movable[s] || targets[s]));
      }
    }

    corners(s, cls) {
      const [x, y] = this.xy(s);
      const d = C / 2 - 3;
      const l = 11;
      const parts = [];
      for (const sx of [-1, 1]) {
        for (const sy of [-1, 1]) {
          parts.push(`M${x + sx * d} ${y + sy * (d - l)}V${y + sy * d}H${x + sx * (d - l)}`);
        }
      }
      el("path", { d: parts.join(""), class: `corners ${cls}` }, cls === "sel" ? this.gOverlay : this.gMarks);
    }

    drawArrow(iccs, cat) {
      const [x0, y0] = this.xy(iccs.slice(0, 2));
      const [x1, y1] = this.xy(iccs.slice(2, 4));
      const len = Math.hypot(x1 - x0, y1 - y0);
      if (!len) return;
      const ux = (x1 - x0) / len;
      const uy = (y1 - y0) / len;
      const a = 10;
      const b = 14;
      el("line", {
        x1: x0 + ux * a, y1: y0 + uy * a, x2: x1 - ux * b, y2: y1 - uy * b,
        class: `arrow ${cat}`, "marker-end": `url(#xq-head-${cat})`,
      }, this.gOverlay);
    }
  }

  window.XQBoard = XQBoard;
})();
