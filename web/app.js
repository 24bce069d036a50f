// xqtb web page: state, API calls, rendering of the panels. Needs xiangqi.js and board.js.
"use strict";
(function () {
  const DEFAULT_FEN = "5k3/9/9/9/9/R8/9/4n4/9/3K5 w - - 0 1";
  const PLAY_MS = 900;
  const $ = (id) => document.getElementById(id);
  const app = $("app");

  // ---------------------------------------------------------------- state
  // line[0] is the root (the loaded FEN); line[i] (i > 0) is the position after line[i].move.
  // Entries after idx are the "future": moves to redo, or the main line once it has been asked for.
  const S = {
    rules: "",            // "" = the server's default rule set
    line: [],             // [{fen, pos, move: {iccs, chinese, wxf} | null, known: value | null}]
    idx: 0,
    lineEnd: null,        // {index, end}: the main line ends at line[index] with `end`
    data: null,           // probe answer for line[idx], or null while loading / on error
    error: null,          // {title, text, retry}
    selected: null,
    hover: null,          // iccs of the move under the pointer in the move list
    flipped: false,
    timer: null,
    notation: localStorage.getItem("xqtb-notation") || "chinese",
    seq: 0,               // request generation for the current position
    solve: null,          // {entry, report, error}: the last search, of the position line entry `entry`
  };

  const board = new XQBoard($("board"), onSquare);

  // ---------------------------------------------------------------- API
  const cache = new Map();

  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  // GET /api/v1/{kind} of a position. Answers are cached, except searches': a search that ran
  // out of time may succeed when asked again.
  async function api(kind, fen, rules) {
    const key = `${kind}|${rules}|${XQ.fenKey(fen)}`;
    const cached = kind !== "search";
    if (cached && cache.has(key)) return cache.get(key);
    let url = `/api/v1/${kind}?fen=${encodeURIComponent(fen)}`;
    if (rules) url += `&rules=${encodeURIComponent(rules)}`;
    const p = (async () => {
      let res;
      try {
        res = await fetch(url, { headers: { Accept: "application/json" } });
      } catch (e) {
        throw new ApiError(0, "The tablebase server cannot be reached. Check your connection.");
      }
      let body = null;
      try { body = await res.json(); } catch (e) { body = null; }
      if (!res.ok) {
        throw new ApiError(res.status, (body && body.error) || `${res.status} ${res.statusText}`);
      }
      if (!body) throw new ApiError(res.status, "The server sent an answer that is not JSON.");
      return body;
    })();
    if (!cached) return p;
    cache.set(key, p);
    // keep definite answers (values, 400, 404); forget transient failures so that Retry asks again
    p.catch((e) => { if (![400, 404].includes(e.status)) cache.delete(key); });
    return p;
  }

  const catOf = (v) => (v && (v.category || v.wdl)) || null;
  const valueOf = (v) => ({
    category: catOf(v), dtm_plies: v.dtm_plies ?? null, rule: v.rule ?? null, rule_plies: v.rule_plies ?? null,
  });

  function errorInfo(e) {
    const st = e.status;
    const titles = {
      0: "Offline.", 400: "Invalid position.", 401: "Not authorized.", 404: "Not in the tablebase.",
      414: "Invalid position.", 429: "Too many requests.", 503: "Tablebase unavailable.",
    };
    return {
      title: titles[st] || (st ? `Error ${st}.` : "Error."),
      text: e.message,
      retry: st === 0 || st === 429 || st >= 500,
    };
  }

  // ---------------------------------------------------------------- words
  const colour = (side) => (side === "w" ? "Red" : "Black");
  const other = (side) => (side === "w" ? "b" : "w");
  const plies = (n) => `${n} ${n === 1 ? "ply" : "plies"}`;
  const invert = (c) => ({ win: "loss", loss: "win", draw: "draw" })[c] || c;
  const RULE_VERB = {
    "perpetual-check": "keep checking (perpetual check)",
    "perpetual-chase": "keep chasing (perpetual chase)",
  };

  // The value of a position in words, for the side to move.
  function describe(v, side, opts) {
    const who = colour(side);
    const cat = v.category;
    if (v.rule) {
      const loser = cat === "win" ? colour(other(side)) : who;
      const verb = RULE_VERB[v.rule] || `lose by the ${v.rule} rule`;
      const when = v.rule_plies ? `in ${plies(v.rule_plies)}` : "now";
      return `${who} ${cat === "win" ? "wins" : "loses"} by rule: ${loser} must ${verb} ${when}`;
    }
    if (cat === "win") {
      const d = v.dtm_plies;
      if (d == null) return `${who} wins`;
      const m = Math.ceil(d / 2);
      return `${who} wins in ${plies(d)} (${m} ${m === 1 ? "move" : "moves"})`;
    }
    if (cat === "loss") {
      const d = v.dtm_plies;
      if (d === 0) {
        if (opts && opts.noMoves) {
          return opts.inCheck ? `${who} is checkmated` : `${who} is stalemated and loses (no legal move)`;
        }
        return `${who} has no legal move and loses`;
      }
      return d == null ? `${who} loses` : `${who} loses in ${plies(d)}`;
    }
    if (cat === "draw") return "Draw";
    return "Unknown";
  }

  // A move's result for the mover: {cat, short, long}
  function moveResult(m, side) {
    const after = catOf(m);
    const cat = invert(after);
    const me = colour(side);
    const d = m.dtm_plies;
    if (m.rule) {
      const loser = cat === "win" ? colour(other(side)) : me;
      const when = m.rule_plies ? `in ${plies(m.rule_plies)} after this move` : "at once";
      return {
        cat,
        short: cat === "win" ? "Win · rule" : "Loss · rule",
        long: `${me} ${cat === "win" ? "wins" : "loses"} by rule: ${loser} must ` +
              `${RULE_VERB[m.rule] || m.rule} ${when}`,
      };
    }
    if (cat === "draw") return { cat, short: "Draw", long: "Draw" };
    if (d == null) return { cat, short: cat === "win" ? "Win" : "Loss", long: `${me} ${cat === "win" ? "wins" : "loses"}` };
    const total = d + 1;
    if (cat === "win" && d === 0) return { cat, short: "Mate", long: `${me} mates at once` };
    return {
      cat,
      short: `${cat === "win" ? "Win" : "Loss"} ${total}`,
      long: `${me} ${cat === "win" ? "wins" : "loses"} in ${plies(total)} from here ` +
            `(${plies(d)} after this move)`,
    };
  }

  const END_TEXT = {
    mate: "checkmate", stalemate: "stalemate: no legal move, which loses", draw: "draw",
    "perpetual-check": "then a forced perpetual check, which loses",
    "perpetual-chase": "then a forced perpetual chase, which loses",
  };

  // ---------------------------------------------------------------- URL and history
  function urlFor(fen, rules) {
    const [b, side] = XQ.fenKey(fen).split(" ");
    let u = `${location.pathname}?fen=${b}_${side}`;
    if (rules) u += `&rules=${encodeURIComponent(rules)}`;
    return u;
  }

  function snapshot() {
    return {
      xqtb: 1,
      rules: S.rules,
      root: S.line[0].fen,
      moves: S.line.slice(1).map((e) => ({ move: e.move, known: e.known })),
      idx: S.idx,
      lineEnd: S.lineEnd,
    };
  }

  function saveHistory(push) {
    const url = urlFor(S.line[S.idx].fen, S.rules);
    if (push) history.pushState(snapshot(), "", url);
    else history.replaceState(snapshot(), "", url);
  }

  function restore(st) {
    let pos = XQ.parseFen(st.root);
    const line = [{ fen: XQ.toFen(pos), pos, move: null, known: null }];
    for (const m of st.moves) {
      pos = XQ.applyMove(pos, m.move.iccs);
      line.push({ fen: XQ.toFen(pos), pos, move: m.move, known: m.known });
    }
    S.rules = st.rules || "";
    S.line = line;
    S.idx = Math.min(st.idx, line.length - 1);
    S.lineEnd = st.lineEnd || null;
  }

  function fromUrl() {
    const q = new URLSearchParams(location.search);
    const h = new URLSearchParams(location.hash.replace(/^#/, ""));
    return { fen: q.get("fen") || h.get("fen"), rules: q.get("rules") || h.get("rules") || "" };
  }

  window.addEventListener("popstate", (ev) => {
    stop();
    if (ev.state && ev.state.xqtb) {
      restore(ev.state);
    } else {
      const u = fromUrl();
      if (!setRoot(u.fen || DEFAULT_FEN, u.rules)) return;
    }
    syncRulesSelect();
    show();
  });

  // ---------------------------------------------------------------- actions
  function setRoot(fen, rules) {
    let pos;
    try {
      pos = XQ.parseFen(fen);
    } catch (e) {
      S.error = { title: "Invalid FEN.", text: e.message, retry: false };
      renderStatus();
      return false;
    }
    S.rules = rules || "";
    S.line = [{ fen: XQ.toFen(pos), pos, move: null, known: null }];
    S.idx = 0;
    S.lineEnd = null;
    return true;
  }

  function loadFen(fen, push) {
    stop();
    if (!setRoot(fen, S.rules)) return;
    saveHistory(push);
    show();
  }

  // Show line[idx]: board at once, value when the probe answers.
  function show() {
    S.selected = null;
    S.hover = null;
    S.data = null;
    S.error = null;
    const cur = S.line[S.idx];
    const seq = ++S.seq;
    if (document.activeElement !== $("fen-input")) $("fen-input").value = cur.fen;
    app.dataset.state = "loading";
    render();
    api("probe", cur.fen, S.rules).then((data) => {
      if (seq !== S.seq) return;
      S.data = data;
      app.dataset.state = "ready";
      render();
    }, (e) => {
      if (seq !== S.seq) return;
      S.error = errorInfo(e);
      S.error.status = e.status;
      noteSearchValue(cur);
      app.dataset.state = "error";
      render();
    });
  }

  function go(i, push) {
    if (i < 0 || i >= S.line.length || i === S.idx) return false;
    S.idx = i;
    saveHistory(push);
    show();
    return true;
  }

  function play(m) {
    stop();
    const cur = S.line[S.idx];
    const next = S.line[S.idx + 1];
    if (next && next.move.iccs === m.iccs) { go(S.idx + 1, true); return; }
    const pos = XQ.applyMove(cur.pos, m.iccs);
    S.line.length = S.idx + 1;
    if (S.lineEnd && S.lineEnd.index > S.idx) S.lineEnd = null;
    S.line.push({
      fen: XQ.toFen(pos), pos, move: { iccs: m.iccs, chinese: m.chinese, wxf: m.wxf }, known: valueOf(m),
    });
    go(S.idx + 1, true);
  }

  // Puts `moves` (a main line or a search's line from line[at]) in the future of line[at],
  // replacing what was there; the line ends after them with `end` (and `cycle`, the offence played
  // on). known(m, i) is the value of the position after the i-th move, for the side to move there.
  function setFuture(at, moves, end, cycle, known) {
    const cur = S.line[at];
    let pos = cur.pos;
    const extra = [];
    moves.forEach((m, i) => {
      pos = XQ.applyMove(pos, m.iccs);
      const fen = XQ.toFen(pos);
      if (m.fen && XQ.fenKey(m.fen) !== XQ.fenKey(fen)) console.warn("line FEN differs", m.fen, fen);
      extra.push({ fen, pos, move: { iccs: m.iccs, chinese: m.chinese, wxf: m.wxf }, known: known(m, i) });
    });
    S.line.length = at + 1;
    S.line.push(...extra);
    S.lineEnd = {
      index: at + extra.length,
      end: end || null,
      cycle: (cycle || []).map((m) => ({ iccs: m.iccs, chinese: m.chinese, wxf: m.wxf })),
    };
    saveHistory(false);
    renderLine();
    renderButtons();
  }

  let mainlineBusy = null;
  // Asks for the main line from line[idx] and puts it in the future (replacing what was there).
  async function loadMainline() {
    const at = S.idx;
    const cur = S.line[at];
    if (S.lineEnd && S.lineEnd.index >= at && S.lineEnd.index < S.line.length) return true;
    if (mainlineBusy) return mainlineBusy;
    app.dataset.mainline = "loading";
    mainlineBusy = api("mainline", cur.fen, S.rules).then((ml) => {
      if (S.line[at] !== cur) return false; // the user went elsewhere meanwhile
      setFuture(at, ml.moves || [], ml.end, ml.cycle, (m) => valueOf(m));
      return true;
    }, (e) => {
      if (S.line[at] === cur) {
        S.error = errorInfo(e);
        S.error.title = "Main line: " + S.error.title.toLowerCase();
        renderStatus();
      }
      return false;
    }).finally(() => { mainlineBusy = null; delete app.dataset.mainline; });
    return mainlineBusy;
  }

  async function forward() {
    if (S.idx < S.line.length - 1) return go(S.idx + 1, false);
    if (atLineEnd()) return false;
    if (!(await loadMainline())) return false;
    return go(S.idx + 1, false);
  }

  async function toEnd() {
    stop();
    if (!(S.lineEnd && S.lineEnd.index < S.line.length && S.lineEnd.index >= S.idx)) {
      if (S.idx === S.line.length - 1 && atLineEnd()) return;
      if (S.idx === S.line.length - 1 && !(await loadMainline())) return;
    }
    go(S.line.length - 1, false);
  }

  // No move to make: the line ended here, or the position is a draw / lost at once.
  function atLineEnd() {
    if (S.lineEnd && S.lineEnd.index === S.idx) return true;
    const v = S.data || S.line[S.idx].known;
    if (!v) return false;
    if (S.data && (S.data.moves || []).length === 0) return true;
    return catOf(v) === "draw";
  }

  function toggle() {
    if (S.timer) { stop(); return; }
    if (atLineEnd() && S.idx === S.line.length - 1) return;
    S.timer = setInterval(async () => {
      if (app.dataset.state === "loading") return; // wait for the value before the next step
      const moved = await forward();
      if (!moved || (S.idx === S.line.length - 1 && atLineEnd())) stop();
    }, PLAY_MS);
    loadMainline();
    renderButtons();
  }

  function stop() {
    if (S.timer) { clearInterval(S.timer); S.timer = null; }
    renderButtons();
  }

  // ---------------------------------------------------------------- search
  let solveBusy = false;
  // Searches line[idx] for a forced win (GET /api/v1/search, within the server's limits), shows
  // the answer and puts its line in the future, to step through like a main line.
  async function solve() {
    if (solveBusy) return;
    stop();
    const cur = S.line[S.idx];
    solveBusy = true;
    app.dataset.search = "loading";
    S.solve = { entry: cur, report: null, error: null };
    renderSolve();
    let report = null;
    let error = null;
    try {
      report = await api("search", cur.fen, S.rules);
    } catch (e) {
      error = errorInfo(e);
    }
    solveBusy = false;
    delete app.dataset.search;
    const at = S.line.indexOf(cur);
    if (at < 0) { S.solve = null; renderSolve(); return; } // the position left the line meanwhile
    S.solve = { entry: cur, report, error };
    if (report && ["win", "loss", "draw"].includes(report.result)) {
      const byMate = ["mate", "stalemate"].includes(report.end);
      // A win not shown to be the shortest has an upper bound for its length, no distance.
      const d = byMate && report.shortest !== false ? report.dtm_plies : null;
      const value = (category, dtm) => ({ category, dtm_plies: dtm, rule: null, rule_plies: null, from: "search" });
      cur.known = cur.known || value(report.result, d);
      if ((report.line || []).length) {
        // after the i-th move the other side is to move when i is even (from 0)
        setFuture(at, report.line, report.end, [], (m, i) =>
          value(i % 2 === 0 ? invert(report.result) : report.result, d == null ? null : d - i - 1));
      }
    }
    if (S.line[S.idx] === cur && !S.data) noteSearchValue(cur);
    render();
  }

  // A position beyond the tables whose value a search found: say so beside the probe's 404.
  function noteSearchValue(cur) {
    const e = S.error;
    if (e && e.status === 404 && !e.noted && cur.known && cur.known.from === "search") {
      e.text += " The value shown is the search's.";
      e.noted = true;
    }
  }

  function solveText(r, side) {
    if (r.result === "unknown") {
      const why = r.stopped ? ` (stopped by the ${r.stopped} limit)` : "";
      return `Unknown: no forced win for either side in ${plies(r.searched_plies)} or fewer${why}`;
    }
    const rule = ["perpetual-check", "perpetual-chase"].includes(r.end) ? r.end : null;
    if (r.shortest === false && r.dtm_plies != null) {
      const why = r.stopped ? `; stopped by the ${r.stopped} limit` : "";
      const who = r.result === "win" ? side : other(side);
      return `${colour(who)} wins in at most ${plies(r.dtm_plies)} (shorter wins ruled out up to ` +
        `${plies(r.searched_plies)}${why})`;
    }
    return describe({ category: r.result, dtm_plies: rule ? null : r.dtm_plies, rule, rule_plies: null },
      side, { noMoves: r.dtm_plies === 0, inCheck: r.end === "mate" });
  }

  function renderSolve() {
    const btn = $("solve");
    btn.disabled = solveBusy;
    btn.setAttribute("aria-busy", solveBusy ? "true" : "false");
    btn.textContent = solveBusy ? "Solving…" : "Solve";
    const box = $("solve-result");
    const stats = $("solve-stats");
    // the answer stays shown while its position is on the line (stepping through its moves)
    const sv = S.solve && S.line.includes(S.solve.entry) ? S.solve : null;
    box.className = "solve-result";
    delete box.dataset.result;
    delete box.dataset.source;
    stats.textContent = "";
    if (!sv) {
      box.textContent = "Search for a forced mate from this position, beyond the tables too.";
      box.classList.add("hint");
      return;
    }
    if (!sv.report && !sv.error) {
      box.textContent = "Searching…";
      box.classList.add("hint");
      return;
    }
    if (sv.error) {
      box.textContent = `${sv.error.title} ${sv.error.text}`;
      box.classList.add("failed");
      return;
    }
    const r = sv.report;
    box.dataset.result = r.result;
    box.dataset.source = r.source;
    box.classList.add(r.result);
    const best = (r.line || [])[0];
    box.textContent = solveText(r, sv.entry.pos.side) + (best ? ` · best move ${moveText(best)}` : "");
    const secs = (r.time_ms / 1000).toFixed(2);
    const n = (x) => x.toLocaleString("en-US");
    stats.textContent = r.source === "tables"
      ? `From the tables: the material is stored · ${secs} s`
      : `From the search: ${n(r.nodes)} positions, ${n(r.table_hits)} read from tables · ${secs} s`;
  }

  // ---------------------------------------------------------------- board input
  function legalMoves() { return (S.data && S.data.moves) || []; }

  function onSquare(s) {
    const cur = S.line[S.idx];
    const moves = legalMoves();
    if (!moves.length) return;
    if (S.selected) {
      const m = moves.find((x) => x.iccs === S.selected + s);
      if (m) { play(m); return; }
    }
    const p = cur.pos.board[s];
    const mine = p && XQ.isRed(p) === (cur.pos.side === "w");
    if (mine && s !== S.selected && moves.some((x) => x.iccs.startsWith(s))) S.selected = s;
    else S.selected = null;
    renderBoard();
  }

  // ---------------------------------------------------------------- rendering
  function render() {
    renderBoard();
    renderStatus();
    renderMoves();
    renderLine();
    renderButtons();
    renderSolve();
  }

  function renderBoard() {
    const cur = S.line[S.idx];
    const side = cur.pos.side;
    const targets = {};
    const movable = {};
    for (const m of legalMoves()) {
      movable[m.iccs.slice(0, 2)] = true;
      if (S.selected && m.iccs.startsWith(S.selected)) targets[m.iccs.slice(2, 4)] = invert(catOf(m));
    }
    const red = side === "w";
    const hover = S.hover && legalMoves().find((m) => m.iccs === S.hover);
    board.render({
      pos: cur.pos,
      selected: S.selected,
      targets,
      movable,
      lastMove: cur.move ? cur.move.iccs : null,
      check: XQ.inCheck(cur.pos, red) ? XQ.kingSquare(cur.pos, red) : null,
      arrow: hover ? { iccs: hover.iccs, cat: invert(catOf(hover)) } : null,
    });
    $("board").setAttribute("aria-label", `Xiangqi board, ${colour(side)} to move`);
  }

  function renderStatus() {
    const cur = S.line[S.idx];
    const side = cur.pos.side;
    $("stm").className = `stm ${side === "w" ? "red" : "black"}`;
    $("stm-text").textContent = `${colour(side)} to move`;
    const v = S.data ? valueOf(S.data) : cur.known;
    const val = $("value");
    if (v && v.category) {
      const red = side === "w";
      val.textContent = describe(v, side, S.data ? {
        noMoves: (S.data.moves || []).length === 0, inCheck: XQ.inCheck(cur.pos, red),
      } : null);
      val.className = `value ${v.category}`;
    } else if (S.error) {
      val.textContent = "Value unknown";
      val.className = "value unknown";
    } else {
      val.textContent = "…";
      val.className = "value unknown";
    }
    let t = $("table").textContent; // kept while the next answer loads
    if (S.data || S.error) t = "";
    if (S.data) {
      t = S.data.table || (v && v.category === "draw" ? "no attacking pieces" : "");
      if (S.data.rules) t += (t ? " · " : "") + S.data.rules;
    }
    $("table").textContent = t;
    const err = $("error");
    err.hidden = !S.error;
    if (S.error) {
      // no title when the message says the same ("... is not in the tablebase")
      const same = S.error.text.toLowerCase().includes(S.error.title.replace(/\.$/, "").toLowerCase());
      $("error-title").textContent = same ? "" : S.error.title;
      $("error-text").textContent = S.error.text;
      $("retry").hidden = !S.error.retry;
    }
  }

  function renderMoves() {
    const ol = $("moves");
    const cur = S.line[S.idx];
    const side = cur.pos.side;
    $("moves-legend").textContent = `result for ${colour(side)} · plies to mate`;
    ol.textContent = "";
    ol.classList.toggle("dim", !S.data);
    const moves = legalMoves();
    if (!S.data) {
      // keep the previous height while loading: show placeholder rows
      const n = S.error ? 0 : Math.max(3, Math.min(8, ol.dataset.last | 0));
      for (let i = 0; i < n; i++) {
        const li = document.createElement("li");
        li.className = "placeholder";
        li.innerHTML = "<span></span>";
        ol.appendChild(li);
      }
      if (S.error) {
        const li = document.createElement("li");
        li.className = "empty";
        li.textContent = "No moves to show: the position could not be probed.";
        ol.appendChild(li);
      }
      return;
    }
    ol.dataset.last = moves.length;
    if (!moves.length) {
      const li = document.createElement("li");
      li.className = "empty";
      li.textContent = `${colour(side)} has no legal move.`;
      ol.appendChild(li);
      return;
    }
    for (const m of moves) {
      const r = moveResult(m, side);
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.className = `move ${r.cat}`;
      b.dataset.testid = "move";
      b.dataset.iccs = m.iccs;
      b.dataset.result = r.cat;
      b.title = `${m.chinese} (${m.iccs}): ${r.long}`;
      b.innerHTML =
        `<span class="zh" lang="zh"></span><span class="wxf"></span><span class="iccs"></span>` +
        `<span class="res"></span>`;
      b.querySelector(".zh").textContent = m.chinese || "";
      b.querySelector(".wxf").textContent = m.wxf || "";
      b.querySelector(".iccs").textContent = m.iccs;
      b.querySelector(".res").textContent = r.short;
      b.addEventListener("click", () => play(m));
      b.addEventListener("mouseenter", () => { S.hover = m.iccs; renderBoard(); });
      b.addEventListener("mouseleave", () => { S.hover = null; renderBoard(); });
      b.addEventListener("focus", () => { S.hover = m.iccs; renderBoard(); });
      b.addEventListener("blur", () => { S.hover = null; renderBoard(); });
      li.appendChild(b);
      ol.appendChild(li);
    }
  }

  function moveText(m) {
    if (S.notation === "wxf") return m.wxf || m.iccs;
    if (S.notation === "iccs") return m.iccs;
    return m.chinese || m.iccs;
  }

  function renderLine() {
    const box = $("line");
    box.textContent = "";
    const root = S.line[0];
    const rootRed = root.pos.side === "w";
    const start = document.createElement("button");
    start.type = "button";
    start.className = "lm start" + (S.idx === 0 ? " current" : "");
    start.textContent = "start";
    start.dataset.testid = "line-move";
    start.dataset.index = "0";
    start.addEventListener("click", () => { stop(); go(0, false); });
    box.appendChild(start);
    let group = null; // one full move (number, Red's move, Black's move) never breaks across lines
    for (let i = 1; i < S.line.length; i++) {
      const e = S.line[i];
      // move number: Red's moves start a number; a line that starts with Black begins "1…"
      const ply = i - 1 + (rootRed ? 0 : 1);
      if (ply % 2 === 0 || i === 1) {
        group = document.createElement("span");
        group.className = "fullmove";
        box.appendChild(group);
        const n = document.createElement("span");
        n.className = "num";
        n.textContent = `${Math.floor(ply / 2) + 1}.${ply % 2 ? "…" : ""}`;
        group.appendChild(n);
      }
      const b = document.createElement("button");
      b.type = "button";
      b.className = "lm" + (i === S.idx ? " current" : "") + (i > S.idx ? " future" : "");
      b.dataset.testid = "line-move";
      b.dataset.index = String(i);
      b.textContent = moveText(e.move);
      b.title = `${e.move.chinese} ${e.move.wxf} ${e.move.iccs}`;
      b.addEventListener("click", () => { stop(); go(i, false); });
      group.appendChild(b);
    }
    if (S.lineEnd && S.lineEnd.index === S.line.length - 1 && S.lineEnd.end) {
      const t = document.createElement("span");
      t.className = "end";
      t.dataset.testid = "line-end";
      t.textContent = END_TEXT[S.lineEnd.end] || S.lineEnd.end;
      box.appendChild(t);
      if (S.lineEnd.cycle && S.lineEnd.cycle.length) {
        const c = document.createElement("span");
        c.className = "cycle";
        c.dataset.testid = "line-cycle";
        c.title = "How the offence goes on until the position repeats";
        c.textContent = `(${S.lineEnd.cycle.map(moveText).join(" ")} … repeats)`;
        box.appendChild(c);
      }
    } else if (S.line.length === 1 && !(S.error && !S.data)) {
      const t = document.createElement("span");
      t.className = "hint";
      const v = S.data ? valueOf(S.data) : root.known;
      t.textContent = v && v.category === "draw"
        ? "A drawn position has no main line: play any move."
        : "Play a move on the board or in the list, or press Play for the main line.";
      box.appendChild(t);
    }
    // keep the current move visible inside the box (never scroll the page itself)
    const curBtn = box.querySelector(".current");
    if (curBtn && box.scrollHeight > box.clientHeight) {
      if (S.idx === S.line.length - 1) {
        box.scrollTop = box.scrollHeight;
      } else {
        const br = box.getBoundingClientRect();
        const cr = curBtn.getBoundingClientRect();
        if (cr.top < br.top || cr.bottom > br.bottom) {
          box.scrollTop += cr.top - br.top - (box.clientHeight - cr.height) / 2;
        }
      }
    }
  }

  function renderButtons() {
    if (!S.line.length) return;
    const last = S.idx === S.line.length - 1;
    // nothing ahead: the line ends here, or the position has no value to play on from
    const noMore = last && (atLineEnd() || (!S.data && !!S.error));
    $("nav-start").disabled = S.idx === 0;
    $("nav-back").disabled = S.idx === 0;
    $("nav-forward").disabled = noMore;
    $("nav-end").disabled = noMore;
    const p = $("nav-play");
    p.disabled = noMore && !S.timer;
    p.classList.toggle("playing", !!S.timer);
    p.setAttribute("aria-pressed", S.timer ? "true" : "false");
    p.querySelector(".long").textContent = S.timer ? "Pause" : "Main line";
    p.querySelector(".short").textContent = S.timer ? "Pause" : "Play";
    p.title = S.timer ? "Pause (space)" : "Play the main line (space)";
    p.setAttribute("aria-label", S.timer ? "Pause" : "Play the main line");
    $("flip").setAttribute("aria-pressed", S.flipped ? "true" : "false");
  }

  // ---------------------------------------------------------------- tables and rules
  let tableList = [];
  function syncRulesSelect() {
    const sel = $("rules");
    if ([...sel.options].some((o) => o.value === S.rules)) sel.value = S.rules;
  }

  async function loadTables() {
    let body;
    try {
      const res = await fetch("/api/v1/tables", { headers: { Accept: "application/json" } });
      if (!res.ok) return;
      body = await res.json();
    } catch (e) { return; }
    tableList = ((body && body.tables) || []).slice().sort((a, b) =>
      (a.rules || "").localeCompare(b.rules || "") || a.table.length - b.table.length ||
      a.table.localeCompare(b.table));
    const rules = [...new Set(tableList.map((t) => t.rules).filter(Boolean))];
    if (rules.length > 1 || (S.rules && !rules.includes(S.rules))) {
      const sel = $("rules");
      sel.textContent = "";
      const opts = [["", "default"], ...rules.map((r) => [r, r])];
      if (S.rules && !rules.includes(S.rules)) opts.push([S.rules, S.rules]);
      for (const [v, label] of opts) {
        const o = document.createElement("option");
        o.value = v;
        o.textContent = label;
        sel.appendChild(o);
      }
      syncRulesSelect();
      $("rules-label").hidden = false;
    }
    if (!tableList.length) return;
    const box = $("tables");
    box.textContent = "";
    for (const t of tableList) {
      const fen = t.example_fen || t.example || t.longest_win_fen || null;
      const label = t.table + (rules.length > 1 ? ` · ${t.rules}` : "");
      let node;
      if (fen) {
        node = document.createElement("a");
        node.href = urlFor(fen, t.rules && rules.length > 1 ? t.rules : "");
        node.addEventListener("click", (ev) => {
          ev.preventDefault();
          if (rules.length > 1) { S.rules = t.rules || ""; syncRulesSelect(); }
          loadFen(fen, true);
        });
        node.title = `Load an example ${t.table} position`;
      } else {
        node = document.createElement("span");
      }
      node.className = "chip";
      node.dataset.testid = "table-chip";
      node.textContent = label;
      box.appendChild(node);
    }
    $("tables-panel").hidden = false;
  }

  // ---------------------------------------------------------------- wiring
  $("fen-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("fen-input").value;
    $("fen-input").blur();
    loadFen(text, true);
  });
  $("nav-start").addEventListener("click", () => { stop(); go(0, false); });
  $("nav-back").addEventListener("click", () => { stop(); go(S.idx - 1, false); });
  $("nav-forward").addEventListener("click", () => { stop(); forward(); });
  $("nav-end").addEventListener("click", () => toEnd());
  $("nav-play").addEventListener("click", () => toggle());
  $("solve").addEventListener("click", () => solve());
  $("flip").addEventListener("click", () => {
    S.flipped = !S.flipped;
    board.setFlipped(S.flipped);
    renderButtons();
  });
  $("retry").addEventListener("click", () => {
    if (S.data) { loadMainline(); S.error = null; renderStatus(); } else show();
  });
  $("rules").addEventListener("change", () => {
    stop();
    S.rules = $("rules").value;
    const fen = S.line[S.idx].fen;
    setRoot(fen, S.rules);
    saveHistory(true);
    show();
  });
  $("notation").value = S.notation;
  $("notation").addEventListener("change", () => {
    S.notation = $("notation").value;
    localStorage.setItem("xqtb-notation", S.notation);
    renderLine();
    renderSolve();
  });
  $("copy-link").addEventListener("click", async () => {
    const url = location.href;
    let ok = false;
    try { await navigator.clipboard.writeText(url); ok = true; } catch (e) { ok = false; }
    $("copy-note").textContent = ok ? "Link copied." : url;
    setTimeout(() => { $("copy-note").textContent = ""; }, 4000);
  });
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (t.closest && t.closest("input, select, textarea")) return;
    const k = ev.key;
    if (k === "ArrowLeft") { stop(); go(S.idx - 1, false); } else if (k === "ArrowRight") { stop(); forward(); } else if (k === "Home" || k === "ArrowUp") { stop(); go(0, false); } else if (k === "End" || k === "ArrowDown") toEnd();
    else if (k === " " && !(t.closest && t.closest("button, a"))) toggle();
    else if (k === "f") $("flip").click();
    else if (k === "s") solve();
    else if (k === "Escape") { S.selected = null; renderBoard(); } else return;
    ev.preventDefault();
  });

  // start
  const u = fromUrl();
  if (history.state && history.state.xqtb) {
    restore(history.state);
  } else if (!setRoot(u.fen || DEFAULT_FEN, u.rules)) {
    setRoot(DEFAULT_FEN, u.rules);
    const err = S.error;
    saveHistory(false);
    show();
    S.error = { title: "Invalid FEN in the link.", text: err ? err.text : "", retry: false };
    renderStatus();
    loadTables();
    return;
  }
  saveHistory(false);
  show();
  loadTables();
})();
