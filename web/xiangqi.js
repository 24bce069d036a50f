// xqtb web page: the board model (FEN, moves, check). No dependencies; defines window.XQ.
// Squares are "a0".."i9" (ICCS): file a-i left to right as Red sees the board, rank 0-9 from Red's side.
"use strict";
(function () {
  const FILES = "abcdefghi";
  const LIMITS = { K: 1, A: 2, B: 2, N: 2, R: 2, C: 2, P: 5 };
  const NAMES = {
    K: "king", A: "advisor", B: "elephant", N: "horse", R: "chariot", C: "cannon", P: "pawn",
  };
  // Traditional characters: Red 帥 仕 相 傌 俥 炮 兵, Black 將 士 象 馬 車 砲 卒.
  const CHARS = {
    K: "帥", A: "仕", B: "相", N: "傌", R: "俥", C: "炮", P: "兵",
    k: "將", a: "士", b: "象", n: "馬", r: "車", c: "砲", p: "卒",
  };

  const sq = (f, r) => FILES[f] + r;
  const fileOf = (s) => FILES.indexOf(s[0]);
  const rankOf = (s) => s.charCodeAt(1) - 48;
  const isRed = (p) => p === p.toUpperCase();
  const onBoard = (f, r) => f >= 0 && f < 9 && r >= 0 && r < 10;

  class FenError extends Error {}

  // Parses a FEN (spaces or underscores between fields). Returns {board: {square: letter}, side: "w"|"b"}.
  // Accepts E/e for elephants and H/h for horses, and r for Red to move; ignores fields after the side.
  function parseFen(text) {
    const fields = String(text || "").trim().replace(/_/g, " ").split(/\s+/).filter(Boolean);
    if (!fields.length) throw new FenError("Enter a FEN first.");
    const rows = fields[0].split("/");
    if (rows.length !== 10) {
      throw new FenError(`The FEN has ${rows.length} rows; a Xiangqi board has 10 (rank 9 first).`);
    }
    const board = {};
    const counts = {};
    rows.forEach((row, i) => {
      const rank = 9 - i;
      let f = 0;
      for (const ch of row) {
        if (ch >= "1" && ch <= "9") { f += ch.charCodeAt(0) - 48; continue; }
        let up = ch.toUpperCase();
        if (up === "E") up = "B";
        if (up === "H") up = "N";
        if (!(up in LIMITS)) throw new FenError(`Unknown piece letter “${ch}” in row ${i + 1}.`);
        if (f > 8) break;
        const p = ch === ch.toUpperCase() ? up : up.toLowerCase();
        board[sq(f, rank)] = p;
        counts[p] = (counts[p] || 0) + 1;
        f += 1;
      }
      if (f !== 9) throw new FenError(`Row ${i + 1} (“${row}”) is ${f} points wide; it must be 9.`);
    });
    let side = (fields[1] || "w").toLowerCase();
    if (side === "r") side = "w";
    if (side !== "w" && side !== "b") {
      throw new FenError(`Side to move “${fields[1]}” must be w (Red) or b (Black).`);
    }
    for (const [p, n] of Object.entries(LIMITS)) {
      for (const [q, colour] of [[p, "Red"], [p.toLowerCase(), "Black"]]) {
        const c = counts[q] || 0;
        if (p === "K" && c === 0) throw new FenError(`${colour} has no king.`);
        if (c > n) throw new FenError(`${colour} has ${c} ${NAMES[p]}s; at most ${n} are allowed.`);
      }
    }
    return { board, side };
  }

  // FEN of a position, with "- - 0 1" after the side to move.
  function toFen(pos, short) {
    const rows = [];
    for (let r = 9; r >= 0; r--) {
      let row = "";
      let empty = 0;
      for (let f = 0; f < 9; f++) {
        const p = pos.board[sq(f, r)];
        if (p) { if (empty) row += empty; empty = 0; row += p; } else empty++;
      }
      if (empty) row += empty;
      rows.push(row);
    }
    return rows.join("/") + " " + pos.side + (short ? "" : " - - 0 1");
  }

  // Board + side only: the identity of a position.
  const fenKey = (text) => toFen(parseFen(text), true);

  // Applies an ICCS move (from-square then to-square) without checking legality: the piece moves,
  // whatever stands on the destination is captured, the side to move changes.
  function applyMove(pos, iccs) {
    const from = iccs.slice(0, 2);
    const to = iccs.slice(2, 4);
    const board = Object.assign({}, pos.board);
    const piece = board[from];
    if (!piece) throw new Error(`no piece on ${from} for move ${iccs}`);
    delete board[from];
    board[to] = piece;
    return { board, side: pos.side === "w" ? "b" : "w" };
  }

  function kingSquare(pos, red) {
    const k = red ? "K" : "k";
    return Object.keys(pos.board).find((s) => pos.board[s] === k) || null;
  }

  // Is the king of the given colour attacked (facing kings included)?
  function inCheck(pos, red) {
    const ks = kingSquare(pos, red);
    if (!ks) return false;
    const b = pos.board;
    const kf = fileOf(ks);
    const kr = rankOf(ks);
    const enemy = (p) => p && isRed(p) !== red;
    const at = (f, r) => (onBoard(f, r) ? b[sq(f, r)] : undefined);
    // lines: chariot, facing king (files only), cannon behind one screen
    for (const [df, dr] of [[1, 0], [-1, 0], [0, 1], [0, -1]]) {
      let f = kf + df;
      let r = kr + dr;
      let screens = 0;
      while (onBoard(f, r)) {
        const p = at(f, r);
        if (p) {
          const u = p.toUpperCase();
          if (screens === 0) {
            if (enemy(p) && (u === "R" || (u === "K" && df === 0))) return true;
          } else if (screens === 1) {
            if (enemy(p) && u === "C") return true;
            break;
          }
          screens++;
        }
        f += df;
        r += dr;
      }
    }
    // horses: the leg is the point next to the horse on the way to the king
    for (const [df, dr] of [[1, 2], [-1, 2], [1, -2], [-1, -2], [2, 1], [2, -1], [-2, 1], [-2, -1]]) {
      const hf = kf + df;
      const hr = kr + dr;
      const p = at(hf, hr);
      if (!enemy(p) || p.toUpperCase() !== "N") continue;
      const legF = Math.abs(df) === 2 ? hf - Math.sign(df) : hf;
      const legR = Math.abs(dr) === 2 ? hr - Math.sign(dr) : hr;
      if (!at(legF, legR)) return true;
    }
    // pawns: from the front, or from the side (only crossed pawns stand beside a king)
    const fwd = red ? 1 : -1;
    for (const [f, r] of [[kf, kr + fwd], [kf - 1, kr], [kf + 1, kr]]) {
      const p = at(f, r);
      if (enemy(p) && p.toUpperCase() === "P") return true;
    }
    return false;
  }

  window.XQ = {
    FILES, CHARS, NAMES, FenError, sq, fileOf, rankOf, isRed,
    parseFen, toFen, fenKey, applyMove, kingSquare, inCheck,
  };
})();
