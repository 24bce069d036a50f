#!/usr/bin/env python3
"""Generate a test set of Xiangqi mate / no-mate positions, every answer checked by Fairy-Stockfish.

What it writes
--------------
A TSV (default tests/data/mates.tsv) with a `#` provenance header, a header row and the columns
  fen  category  side  expect  fsf_bestmove  confirm  pieces
fen: our FEN (ranks from Black's side, `KABNRCP`/`kabnrcp`, `w` = Red, `b` = Black to move, always
`- - 0 1`); side: the side to move (`red`/`black`); expect: `mate N` (the side to move mates in N
moves = 2N-1 plies), `mated N` (the side to move is mated in N moves = 2N plies) or `none`;
fsf_bestmove: FSF's best move in OUR ICCS (files a..i, ranks 0..9 from Red's side; FSF's UCI ranks
are 1..10); confirm: the searches that established the answer (below); pieces: pieces incl. kings.

Categories and how they are made
--------------------------------
Every position is a random legal placement (seeded `random.Random`): one king per side in its
palace, advisors/elephants on their legal points, pawns on legal squares for their side (own half:
ranks 3-4 on files a,c,e,g,i for Red; anywhere across the river), the side not to move not in check,
the kings not facing each other on an open file, the side to move having a legal move, and
`pyffish.validate_fen` accepting the FEN. Positions are built with Red as the attacker and then,
to balance the colours, about half are rotated by 180 degrees with colours swapped so that Black is
the attacker; every FSF search runs on the position as written to the file.
  mate      5-10 pieces; the attacker has two or three of chariot/horse/cannon and 0-2 pawns, the
            defender 0-2 advisors, 0-2 elephants and sometimes one chariot/horse/cannon/pawn; attacker
            pieces loosely biased towards the defender's palace. Mates of 2..9 moves, quota per length
            --mate-quota. Long mates are rare among random placements, so while lengths >= 6 are still
            wanted, a share (--mutate) of the candidates are one-piece mutations (one piece moved to
            another legal point, usually within two steps) of kept positions of >= 5 moves; a random
            root position and its mutations give at most --per-root rows (some rows are therefore
            close relatives; the log marks them).
  composed  9-16 pieces, like the classic composed puzzles: the attacker has chariot, horse, cannon
            and 1-4 pawns (sometimes a second chariot/horse/cannon) placed close to the defender's
            palace; the defender (near-)full advisors and elephants, sometimes a chariot/horse/cannon
            and 0-2 pawns near the attacker's palace. Mates of 3..9 moves, quota --composed-quota;
            generated like `mate`.
  capture   4-5 pieces (6 cannot happen: the largest target has 4): the side to move can capture a
            defender piece after which the material is KRvK, KRvKA, KRvKB, KNvK or KPvK (the side to
            move having the R/N/P); the extra defender piece is put on a square the attacker's piece
            attacks. Kept when FSF finds a mate of 2..--capture-max-moves (12) moves, at most
            --capture-per-length per length, the five targets in turn. `confirm` ends with
            `cap=SIG` (FSF's best move is that capture, SIG the material after it by colour, Red first)
            or `nocap(table=SIG)`.
  mated     the position after FSF's best move in kept `mate N` rows (mate and composed, N >= 2),
            spread over the lengths: `mated N-1` for the new side to move.
  nomate    5-14 pieces, both sides to move; half with `mate` material, half with mixed material.

How answers are checked (what "confirmed" means)
------------------------------------------------
FSF 11.1 is driven over UCI (Threads 1, Hash 64, `ucinewgame` before every search, so node-capped
searches are deterministic). FSF's `xiangqi` scores a repetition in which one side checks all the
time as a loss for that side, inside its search too, so many of its "mates" there are wins by that
rule (a random sample: 44 of ~300 KRRvKRRA positions differ). Each answer is therefore checked under
two variants: PURE = `xiangqi-norep`, defined in a temporary variants.ini loaded with VariantPath as
`[xiangqi-norep:xiangqi] perpetualCheckIllegal = false, nFoldValue = draw` (every repetition a draw:
FSF's mates are real checkmates/stalemates, as under the `cycles-are-draws` rule set), and STD =
`UCI_Variant xiangqi` (FSF's rules; FSF 11.1 has no chasing rule). Both must give the same answer.
`mate N`:
  1. screen (PURE): `go mate M nodes S` (M = 9, or 12 for capture) reports `score mate K`, K <= M;
  2. shortest (PURE): `go mate K-1 nodes B`, repeated while it finds a shorter mate; N is the length
     at which `go mate N-1` ends (node cap or FSF's maximum depth) without a mate of <= N-1
     (B = --short-nodes, or --long-nodes when N-1 >= 5: FSF sometimes needs millions of nodes to
     find a mate of 6 moves);
  3. deep (PURE): `go depth D nodes C`, D = max(16, 2N+4, depth where the mate was found + 2), must
     end with `score mate N` (a shorter mate there restarts step 2); its best move is fsf_bestmove,
     and its PV is replayed with pyffish (all moves legal) to see how it ends: checkmate or
     stalemate (a loss for the stalemated side in Xiangqi);
  4. STD: `go mate N` finds a mate of exactly N and `go mate N-1` finds none;
  5. successor (PURE), N >= 2: after fsf_bestmove every defender reply allows `go mate N-1` to find a
     mate of <= N-1 moves, some reply allows none of <= N-2, and `go depth max(16, 4N+4)` there does
     not score the defender mated in fewer than N-1 moves (these catch shorter mates that the
     node-capped searches of steps 2 and 4 missed; a deep search reporting a *longer* mate than a
     mate FSF has found is search noise and accepted).
`mated K`: step 5 for the position itself, and `go depth max(16, 4K+8) nodes C` ending with
`score mate -K` under PURE and STD.
`none`: under PURE and STD, `go mate 9 nodes B` finds no mate and `go depth 16 nodes C` ends with a
non-mate score (depth reached >= 12).
The confirm column records this, e.g. `mate4 pure:short=mate3:none/1500000n,deep=d20/mate4/8123n
std:mate4:found/912n,mate3:none/1500000n succ=mated3:ok,deep=d20/mate-3 end=checkmate` (for "none" results the node
cap is given, for the others the nodes used and the depth reached).
Caveat: a mate FSF finds is constructive (sound up to hash collisions), but "no shorter mate" and
"no mate" are FSF's verdicts within the node caps, not proofs. Under the Asian rules' chasing rule a
win could in principle come sooner than the pure mate (FSF 11.1 cannot check that).
Every search also has a wall-clock cap (--call-seconds): on expiry the script sends `stop`, kills and
restarts the engine if needed, and drops the position (the run is then not exactly reproducible; the
number of such events is printed). --max-minutes is a soft budget that cuts categories short.

Versions
--------
Fairy-Stockfish 11.1 LB 64 (Debian package 11.1-1+b1, /usr/games/fairy-stockfish) for all searches;
pyffish 0.0.90 (Python 3.11) for FEN validation, legal moves and PV replay; otherwise Python stdlib.

Usage
-----
  python3 scripts/mate-positions.py --seed 1 --out tests/data/mates.tsv --date 2026-12-06
Options [defaults]: --seed [1], --out [tests/data/mates.tsv], --engine [/usr/games/fairy-stockfish],
--mate-quota [2=11,3=11,4=10,5=8,6=8,7=8,8=8,9=8], --composed-quota [3=3,...,9=3], --capture [20],
--capture-per-length [4], --capture-max-moves [12], --nomate [20], --mated [20], --screen-nodes
[200000], --short-nodes [1500000], --long-nodes [5000000], --deep-nodes [3000000], --mutate [0.6],
--per-root [3], --max-candidates [20000 per category], --call-seconds [60], --max-minutes [48], --date [today].
One engine process (Threads 1); progress on stderr; the counts per category and length on stdout.
"""
import argparse
import datetime
import os
import queue
import random
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

try:
    import pyffish as sf
except ImportError:
    sys.exit("mate-positions.py needs pyffish: pip install pyffish  (tested with 0.0.90)")

VARIANT = "xiangqi"  # pyffish's variant (legality, move replay)
STD = "xiangqi"  # FSF's Xiangqi: a perpetual check loses (FSF 11.1 has no chasing rule)
PURE = "xiangqi-norep"  # the same game with every repetition a draw: FSF's mates are then real mates
VARIANTS_INI = f"""[{PURE}:xiangqi]
perpetualCheckIllegal = false
nFoldValue = draw
"""
ENGINE_VERSION = "Fairy-Stockfish 11.1 LB 64"

# ----------------------------------------------------------------------------- board
# grid[r][f]: r = rank 0..9 (Red at the bottom), f = file 0..8 (a..i); '.' = empty.

PALACE = [(f, r) for f in (3, 4, 5) for r in (0, 1, 2)]
ADVISOR = [(3, 0), (5, 0), (4, 1), (3, 2), (5, 2)]
ELEPHANT = [(2, 0), (6, 0), (0, 2), (4, 2), (8, 2), (2, 4), (6, 4)]
ALL = [(f, r) for f in range(9) for r in range(10)]
PAWN = [(f, r) for f in range(0, 9, 2) for r in (3, 4)] + [(f, r) for f in range(9) for r in range(5, 10)]


def points(piece):
    """Legal points of a piece letter (upper case = Red)."""
    red = piece.isupper()
    base = {"K": PALACE, "A": ADVISOR, "B": ELEPHANT, "P": PAWN}.get(piece.upper(), ALL)
    return base if red else [(f, 9 - r) for f, r in base]


def empty():
    return [["."] * 9 for _ in range(10)]


def parse_fen(fen):
    parts = fen.split()
    grid = empty()
    for i, row in enumerate(parts[0].split("/")):
        f = 0
        for ch in row:
            if ch.isdigit():
                f += int(ch)
            else:
                grid[9 - i][f] = ch
                f += 1
    return grid, parts[1]


def to_fen(grid, side):
    rows = []
    for r in range(9, -1, -1):
        s, e = "", 0
        for c in grid[r]:
            if c == ".":
                e += 1
            else:
                s += (str(e) if e else "") + c
                e = 0
        rows.append(s + (str(e) if e else ""))
    return "/".join(rows) + f" {side} - - 0 1"


def rotate(fen):
    """Rotate 180 degrees and swap colours (and the side to move): the same position for the other colour."""
    g, s = parse_fen(fen)
    n = empty()
    for r in range(10):
        for f in range(9):
            n[9 - r][8 - f] = g[r][f].swapcase()
    return to_fen(n, "b" if s == "w" else "w")


def material(fen):
    g, _ = parse_fen(fen)
    return [c for row in g for c in row if c != "."]


def sig(pieces):
    """Material signature from Red's pieces and Black's, e.g. 'KRvKA'."""
    order = "KRNCPAB"
    red = "".join(sorted((p for p in pieces if p.isupper()), key=order.index))
    blk = "".join(sorted((p.upper() for p in pieces if p.islower()), key=order.index))
    return f"{red}v{blk}"


def attacked(g, f, r, by_red):
    """Is square (f, r) attacked by the pieces of colour by_red (for king-safety purposes)?"""
    R, C, N, P, K = ("RCNPK" if by_red else "rcnpk")
    for df, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        ff, rr, screens = f + df, r + dr, 0
        while 0 <= ff < 9 and 0 <= rr < 10:
            c = g[rr][ff]
            if c != ".":
                if screens == 0 and (c == R or (c == K and df == 0)):
                    return True
                if screens == 1 and c == C:
                    return True
                screens += 1
                if screens > 1:
                    break
            ff += df
            rr += dr
    for df, dr in ((1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)):
        hf, hr = f + df, r + dr  # horse square
        if 0 <= hf < 9 and 0 <= hr < 10 and g[hr][hf] == N:
            # leg: next to the horse, one step towards the target along the long axis
            lf, lr = (hf - df // 2, hr) if abs(df) == 2 else (hf, hr - dr // 2)
            if g[lr][lf] == ".":
                return True
    if by_red:
        if r - 1 >= 0 and g[r - 1][f] == P:
            return True
        for ff in (f - 1, f + 1):
            if 0 <= ff < 9 and g[r][ff] == P and r >= 5:
                return True
    else:
        if r + 1 <= 9 and g[r + 1][f] == P:
            return True
        for ff in (f - 1, f + 1):
            if 0 <= ff < 9 and g[r][ff] == P and r <= 4:
                return True
    return False


def king(g, red):
    k = "K" if red else "k"
    for r in range(10):
        for f in range(9):
            if g[r][f] == k:
                return f, r
    return None


def in_check(g, red):
    k = king(g, red)
    return attacked(g, k[0], k[1], not red)


def legal_fen(fen):
    """Our legality rules plus pyffish's: see the module docstring."""
    g, side = parse_fen(fen)
    pcs = material(fen)
    if pcs.count("K") != 1 or pcs.count("k") != 1:
        return False
    for r in range(10):
        for f in range(9):
            c = g[r][f]
            if c != "." and (f, r) not in points(c):
                return False
    mover_red = side == "w"
    if in_check(g, not mover_red):  # side not to move in check (includes facing kings)
        return False
    if sf.validate_fen(fen, VARIANT) != sf.FEN_OK:
        return False
    return bool(sf.legal_moves(VARIANT, fen, []))


def to_ours(m):
    """FSF UCI move (ranks 1..10) -> our ICCS (ranks 0..9)."""
    mm = re.fullmatch(r"([a-i])(\d+)([a-i])(\d+)", m)
    if not mm:
        return m
    return f"{mm.group(1)}{int(mm.group(2)) - 1}{mm.group(3)}{int(mm.group(4)) - 1}"


def to_fsf(m):
    return f"{m[0]}{int(m[1]) + 1}{m[2]}{int(m[3]) + 1}"


def after_move(fen, m):
    """The FEN after FSF move m, normalised to '... - - 0 1'."""
    return " ".join(sf.get_fen(VARIANT, fen, [m]).split()[:2]) + " - - 0 1"


def sq_of(m, end):
    """Destination (end=1) or origin (end=0) of an FSF UCI move, as (file, rank 0..9)."""
    mm = re.fullmatch(r"([a-i])(\d+)([a-i])(\d+)", m)
    return (ord(mm.group(1 + 2 * end)) - 97, int(mm.group(2 + 2 * end)) - 1)


# ----------------------------------------------------------------------------- engine
class Engine:
    """One Fairy-Stockfish UCI process with a hard per-call wall-clock cap."""

    def __init__(self, path, call_seconds):
        self.path, self.cap = path, call_seconds
        self.timeouts = 0
        self.calls = 0
        self.nodes = 0
        fd, self.ini = tempfile.mkstemp(prefix="xqtb-fsf-", suffix=".ini")
        with os.fdopen(fd, "w") as fh:
            fh.write(VARIANTS_INI)
        self._start()

    def _start(self):
        self.p = subprocess.Popen([self.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.q = queue.Queue()
        threading.Thread(target=self._reader, args=(self.p, self.q), daemon=True).start()
        self.send("uci")
        self._until("uciok", 30)
        for name, val in (("VariantPath", self.ini), ("Threads", "1"), ("Hash", "64")):
            self.send(f"setoption name {name} value {val}")
        self.variant = None
        self.send("isready")
        self._until("readyok", 30)

    @staticmethod
    def _reader(p, q):
        for line in p.stdout:
            q.put(line.rstrip("\n"))
        q.put(None)

    def send(self, s):
        self.p.stdin.write(s + "\n")
        self.p.stdin.flush()

    def _until(self, prefix, seconds):
        out, end = [], time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return out, False
            try:
                line = self.q.get(timeout=left)
            except queue.Empty:
                return out, False
            if line is None:
                return out, False
            out.append(line)
            if line.startswith(prefix):
                return out, True

    def restart(self):
        self.p.kill()
        self.p.wait()
        self._start()

    def search(self, fen, go, variant):
        """Run `go ...` on fen under `variant` from a fresh state. Returns dict(score=('mate'|'cp', v) or
        None, depth, nodes, bestmove, pv) or None on a timeout."""
        self.calls += 1
        if variant != self.variant:
            self.send(f"setoption name UCI_Variant value {variant}")
            self.variant = variant
        self.send("ucinewgame")
        self.send("isready")
        _, ok = self._until("readyok", 30)
        if not ok:
            self.timeouts += 1
            self.restart()
            return None
        self.send(f"position fen {fen}")
        self.send(go)
        out, ok = self._until("bestmove", self.cap)
        if not ok:
            self.timeouts += 1
            self.send("stop")
            more, ok2 = self._until("bestmove", 5)
            if not ok2:
                self.restart()
            return None
        res = {"score": None, "depth": 0, "nodes": 0, "pv": [], "bestmove": out[-1].split()[1]}
        for line in out:
            if not line.startswith("info") or " score " in line and ("lowerbound" in line or "upperbound" in line):
                continue
            t = line.split()
            if "nodes" in t:
                res["nodes"] = max(res["nodes"], int(t[t.index("nodes") + 1]))
            if "score" in t:
                i = t.index("score")
                res["score"] = (t[i + 1], int(t[i + 2]))
                res["depth"] = int(t[t.index("depth") + 1])
                res["pv"] = t[t.index("pv") + 1:] if "pv" in t else []
        self.nodes += res["nodes"]
        return res

    def close(self):
        try:
            self.send("quit")
            self.p.wait(timeout=5)
        except Exception:
            self.p.kill()
        if os.path.exists(self.ini):
            os.unlink(self.ini)


def mate_of(res):
    """Mate length for the side to move (positive = mates, negative = is mated) or None."""
    if res and res["score"] and res["score"][0] == "mate":
        return res["score"][1]
    return None


# ----------------------------------------------------------------------------- checks
class Checker:
    """The FSF checks of one position; every method returns None on failure and says why in self.why."""

    def __init__(self, eng, a):
        self.e, self.a = eng, a
        self.why = ""
        self.replies_cache = {}

    def search(self, fen, go, variant):
        r = self.e.search(fen, go, variant)
        if r is None:
            self.why = f"timeout ({variant}: {go})"
        return r

    def pv_end(self, fen, pv, plies):
        """Replay FSF's PV with pyffish; 'checkmate'/'stalemate' if it ends the game after `plies` plies,
        'pv-short' if the PV stops early, None if a move is illegal for pyffish."""
        moves = []
        for m in pv[:plies]:
            if m not in sf.legal_moves(VARIANT, fen, moves):
                return None
            moves.append(m)
        if len(moves) < plies:
            return "pv-short"
        if sf.legal_moves(VARIANT, fen, moves):
            return "pv-no-end"
        return "checkmate" if sf.gives_check(VARIANT, fen, moves) else "stalemate"

    def none_nodes(self, k):
        """Node cap of a PURE `go mate k` search that is to find nothing: more for longer mates."""
        return self.a.short_nodes if k < 5 else self.a.long_nodes

    def screen(self, fen, most):
        """`go mate most` under PURE: (length, depth) of the mate found, or None."""
        r = self.search(fen, f"go mate {most} nodes {self.a.screen_nodes}", PURE)
        k = mate_of(r)
        return (k, r["depth"]) if k is not None and 0 < k <= most else None

    def shortest_mate(self, fen, first, dfound, wanted=lambda n: True):
        """From a mate of `first` moves found at depth dfound, establish the shortest length N under PURE,
        then check STD agrees. Returns (N, bestmove, confirm) or None. Gives up early when no length
        `wanted` is left."""
        a, n = self.a, first
        for _ in range(3):
            while n > 1:
                if not any(wanted(m) for m in range(1, n + 1)):
                    self.why = f"mate <= {n}: lengths not wanted"
                    return None
                r = self.search(fen, f"go mate {n - 1} nodes {self.none_nodes(n - 1)}", PURE)
                if r is None:
                    return None
                k = mate_of(r)
                if k is None or not 0 < k <= n - 1:
                    break
                n, dfound = k, r["depth"]
            if not wanted(n):
                self.why = f"mate {n}: length not wanted"
                return None
            depth = max(16, 2 * n + 4, dfound + 2)
            deep = self.search(fen, f"go depth {depth} nodes {a.deep_nodes}", PURE)
            if deep is None:
                return None
            k = mate_of(deep)
            if k is not None and 0 < k < n:
                n, dfound = k, deep["depth"]
                continue
            if k != n:
                self.why = f"deep d{deep['depth']} says {deep['score']}, not mate {n}"
                return None
            break
        else:
            self.why = "no stable length"
            return None
        if sf.legal_moves(VARIANT, fen, []).count(deep["bestmove"]) != 1:
            self.why = "bestmove illegal for pyffish"
            return None
        end = self.pv_end(fen, deep["pv"], 2 * n - 1)
        if end is None:
            self.why = "PV illegal for pyffish"
            return None
        short = f"short=mate{n - 1}:none/{self.none_nodes(n - 1)}n," if n > 1 else ""
        conf = f"mate{n} pure:{short}deep=d{deep['depth']}/mate{n}/{deep['nodes']}n"
        # the same verdict under FSF's own Xiangqi rules (perpetual check loses): `go mate n` must find a
        # mate of exactly n moves and `go mate n-1` none
        r = self.search(fen, f"go mate {n} nodes {a.short_nodes}", STD)
        if r is None:
            return None
        if mate_of(r) != n:
            self.why = f"FSF xiangqi rules: go mate {n} says {r['score']}"
            return None
        std = f"std:mate{n}:found/{r['nodes']}n"
        if n > 1:
            r = self.search(fen, f"go mate {n - 1} nodes {a.short_nodes}", STD)
            if r is None:
                return None
            k = mate_of(r)
            if k is not None and 0 < k <= n - 1:
                self.why = f"FSF xiangqi rules give mate {k} < {n}"
                return None
            std += f",mate{n - 1}:none/{a.short_nodes}n"
        # FSF's best move must lead to a position where the defender is mated in exactly n-1 (by its
        # replies), and a deep search there must not find the defender mated sooner: both catch a
        # shorter mate that the node-capped `go mate n-1` searches missed
        succ = ""
        if n > 1:
            after = after_move(fen, deep["bestmove"])
            if self.replies_check(after, n - 1) is None:
                self.why = f"after {to_ours(deep['bestmove'])}: {self.why}"
                return None
            d2 = self.search(after, f"go depth {max(16, 4 * n + 4)} nodes {a.deep_nodes}", PURE)
            if d2 is None:
                return None
            j = mate_of(d2)
            if j is not None and -(n - 1) < j < 0:
                self.why = f"after {to_ours(deep['bestmove'])}: deep says {d2['score']}, a shorter mate"
                return None
            succ = f" succ=mated{n - 1}:ok,deep=d{d2['depth']}/{d2['score'][0]}{d2['score'][1]}"
        return n, deep["bestmove"], f"{conf} {std}{succ} end={end}"

    def confirm_mate(self, fen, most, wanted=lambda n: True):
        s = self.screen(fen, most)
        if s is None:
            self.why = self.why or "no mate in this orientation"
            return None
        return self.shortest_mate(fen, *s, wanted)

    def confirm_none(self, fen):
        """No mate of <= 9 moves for the side to move and no mate score either way at depth 16, under both."""
        a, parts, best = self.a, [], None
        for v, tag in ((PURE, "pure"), (STD, "std")):
            r = self.search(fen, f"go mate 9 nodes {a.short_nodes}", v)
            if r is None:
                return None
            if mate_of(r) is not None:
                self.why = f"{tag} mate9 says {r['score']}"
                return None
            d = self.search(fen, f"go depth 16 nodes {a.deep_nodes}", v)
            if d is None:
                return None
            if d["score"] is None or mate_of(d) is not None or d["depth"] < 12:
                self.why = f"{tag} deep d{d['depth']} says {d['score']}"
                return None
            best = best or d["bestmove"]
            parts.append(f"{tag}:mate9:none/{a.short_nodes}n,deep=d{d['depth']}/cp{d['score'][1]}/{d['nodes']}n")
        return best, "none " + " ".join(parts)

    def replies_check(self, fen, k):
        """Side to move (the defender) mated in k moves, by its replies, under PURE: every reply allows
        `go mate k` to find a mate of <= k moves (constructive), and some reply allows no mate of <= k-1
        (`go mate k-1` finds none). Returns (number of replies, longest reply) or None; cached."""
        key = (fen, k)
        if key in self.replies_cache:
            self.why = self.replies_cache[key][1]
            return self.replies_cache[key][0]
        a = self.a
        res, self.why = None, ""
        replies = sf.legal_moves(VARIANT, fen, [])
        exact = []
        for m in replies:
            r = self.search(sf.get_fen(VARIANT, fen, [m]), f"go mate {k} nodes {a.short_nodes}", PURE)
            j = mate_of(r)
            if j is None or not 0 < j <= k:
                self.why = self.why or f"reply {to_ours(m)}: no mate <= {k} found"
                break
            if j == k:
                exact.append(m)
        else:
            if not replies:
                self.why = "no legal move"
            elif k == 1:
                res = (len(replies), replies[0])
            else:
                for m in exact:
                    r = self.search(sf.get_fen(VARIANT, fen, [m]), f"go mate {k - 1} nodes {a.short_nodes}", PURE)
                    if r is None:
                        break
                    j = mate_of(r)
                    if j is None or not 0 < j <= k - 1:
                        res = (len(replies), m)
                        break
                else:
                    self.why = f"every reply allows a mate of <= {k - 1}"
        if "timeout" not in self.why:
            self.replies_cache[key] = (res, self.why)
        return res

    def confirm_mated(self, fen, k):
        """Side to move mated in k moves (2k plies): replies_check, and the deep searches under PURE and
        STD say mate -k."""
        a = self.a
        rc = self.replies_check(fen, k)
        if rc is None:
            return None
        nrep, longest = rc
        depth = max(16, 4 * k + 8)
        low = f",{to_ours(longest)}:mate{k - 1}:none/{a.short_nodes}n" if k > 1 else ""
        conf = f"mated{k} pure:replies={nrep}:all-mate<={k}{low}"
        best = None
        for v, tag in ((PURE, "pure"), (STD, "std")):
            d = self.search(fen, f"go depth {depth} nodes {a.deep_nodes}", v)
            if d is None:
                return None
            if mate_of(d) != -k:
                self.why = f"{tag} deep d{d['depth']} says {d['score']}, not mate -{k}"
                return None
            best = best or d["bestmove"]
            conf += f"{',' if tag == 'pure' else ' std:'}deep=d{d['depth']}/mate-{k}/{d['nodes']}n"
        return best, conf


# ----------------------------------------------------------------------------- random placement
def place(rng, red_pieces, black_pieces, side, bias=None, tries=200):
    """Random legal placement with Red's pieces `red_pieces` (upper case) and Black's (lower case).
    bias(piece) -> list of preferred points or None. Returns a FEN or None."""
    for _ in range(tries):
        g = empty()
        ok = True
        for p in ["K", "k"] + list(red_pieces) + list(black_pieces):
            pts = points(p)
            pref = bias(p) if bias else None
            cand = pref if pref else pts
            free = [(f, r) for f, r in cand if g[r][f] == "." and (f, r) in pts]
            if not free:
                free = [(f, r) for f, r in pts if g[r][f] == "."]
            if not free:
                ok = False
                break
            f, r = rng.choice(free)
            g[r][f] = p
        if not ok:
            continue
        fen = to_fen(g, side)
        if legal_fen(fen):
            return fen
    return None


def mutate(rng, fen, tries=30):
    """A neighbour of a position: one piece (any, kings included) moved to another of its legal points,
    usually within two steps of where it stood. Returns a legal FEN or None."""
    g0, side = parse_fen(fen)
    occ = [(f, r) for r in range(10) for f in range(9) if g0[r][f] != "."]
    for _ in range(tries):
        g = [row[:] for row in g0]
        f, r = rng.choice(occ)
        p = g[r][f]
        pts = [(x, y) for x, y in points(p) if g[y][x] == "."]
        if rng.random() < 0.7:
            pts = [(x, y) for x, y in pts if max(abs(x - f), abs(y - r)) <= 2]
        if not pts:
            continue
        x, y = rng.choice(pts)
        g[r][f], g[y][x] = ".", p
        new = to_fen(g, side)
        if legal_fen(new):
            return new
    return None


NEAR_BLACK_PALACE = [(f, r) for f in range(1, 8) for r in range(5, 10)]
CLOSE_BLACK_PALACE = [(f, r) for f in range(2, 7) for r in range(6, 10)]


def mate_material(rng):
    att = [rng.choice("RRNC") for _ in range(rng.choice((2, 2, 3)))]
    while att.count("R") > 2 or att.count("N") > 2 or att.count("C") > 2:
        att = [rng.choice("RRNC") for _ in range(len(att))]
    att += ["P"] * rng.choice((0, 0, 1, 2))
    dfd = ["a"] * rng.choice((0, 1, 2, 2)) + ["b"] * rng.choice((0, 1, 2, 2))
    if rng.random() < 0.35:
        dfd.append(rng.choice("rncp"))
    while 2 + len(att) + len(dfd) > 10:
        dfd.pop()
    while 2 + len(att) + len(dfd) < 5:
        dfd.append(rng.choice("ab"))
    return att, dfd


def mate_bias(rng):
    def bias(p):
        if p in "RNC" and rng.random() < 0.5:
            return NEAR_BLACK_PALACE
        if p == "P":
            return NEAR_BLACK_PALACE
        return None
    return bias


def composed_material(rng):
    att = ["R", "N", "C"] + ["P"] * rng.choice((1, 2, 2, 3, 4))
    if rng.random() < 0.3:
        att.append(rng.choice("RNC"))
    dfd = ["a", "a", "b", "b"]
    if rng.random() < 0.3:
        dfd.pop(rng.randrange(4))
    if rng.random() < 0.4:
        dfd.append(rng.choice("rcn"))
    dfd += ["p"] * rng.choice((0, 0, 1, 2))
    while 2 + len(att) + len(dfd) > 16:
        dfd.pop()
    return att, dfd


def composed_bias(rng):
    def bias(p):
        if p in "RNCP":
            return CLOSE_BLACK_PALACE
        if p == "p":  # defender pawns threatening Red's palace
            return [(f, r) for f in range(2, 7) for r in range(0, 4)]
        return None
    return bias


def nomate_material(rng):
    if rng.random() < 0.5:
        return mate_material(rng)
    red = [rng.choice("RNCP") for _ in range(rng.choice((1, 1, 2, 3)))]
    blk = [rng.choice("rncp") for _ in range(rng.choice((0, 1, 1, 2)))]
    red += ["A"] * rng.choice((0, 1, 2)) + ["B"] * rng.choice((0, 1, 2))
    blk += ["a"] * rng.choice((0, 1, 2)) + ["b"] * rng.choice((0, 1, 2))
    for p in "RNCrnc":
        while (red + blk).count(p) > 2:
            (red if p.isupper() else blk).remove(p)
    while 2 + len(red) + len(blk) < 5:
        blk.append(rng.choice("ab"))
    while 2 + len(red) + len(blk) > 14:
        (red if len(red) > len(blk) else blk).pop()
    return red, blk


def quota(spec):
    """'2=11,3=11' -> {2: 11, 3: 11}"""
    return {int(k): int(v) for k, v in (x.split("=") for x in spec.split(",") if x)}


CAPTURE_TARGETS = [("R", ""), ("R", "a"), ("R", "b"), ("N", ""), ("P", "")]


# ----------------------------------------------------------------------------- generation
class Gen:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.eng = Engine(a.engine, a.call_seconds)
        self.chk = Checker(self.eng, a)
        self.rows = []
        self.t0 = time.monotonic()
        self.seen = set()
        self.colours = Counter()

    def elapsed(self):
        return time.monotonic() - self.t0

    def over_budget(self):
        return self.elapsed() > self.a.max_minutes * 60

    def log(self, msg):
        print(f"[{self.elapsed():7.1f}s] {msg}", file=sys.stderr, flush=True)

    def orient(self, cat, red_fen):
        """Use Red as attacker or rotate to Black, whichever colour has fewer rows in cat so far."""
        r, b = self.colours[(cat, "red")], self.colours[(cat, "black")]
        black = b < r or (b == r and self.rng.random() < 0.5)
        fen = rotate(red_fen) if black else red_fen
        return fen if legal_fen(fen) else None

    def add(self, fen, cat, expect, move, confirm, attacker=None):
        side = "red" if parse_fen(fen)[1] == "w" else "black"
        self.rows.append((fen, cat, side, expect, to_ours(move), confirm, str(len(material(fen)))))
        self.seen.add(fen.split()[0] + fen.split()[1])
        self.colours[(cat, attacker or side)] += 1

    def new(self, fen):
        return fen and (fen.split()[0] + fen.split()[1]) not in self.seen

    def gen_mates(self, cat, need, material_fn, bias_fn, lo, hi):
        """Random placements, plus (while lengths >= 6 are still wanted, with probability --mutate)
        one-piece mutations of kept positions of >= 5 moves: long mates are rare among random placements
        but common next to a long mate. A random root and its mutations yield at most --per-root rows."""
        lengths = sorted(need)
        got = Counter()
        cands = 0
        pool, tried, per_root = [], set(), Counter()  # pool: (red-orientation FEN, mate length, root)

        def wanted(n):
            return n in need and got[n] < need[n]

        while any(got[n] < need[n] for n in lengths) and cands < self.a.max_candidates:
            if self.over_budget():
                self.log(f"{cat}: wall budget exceeded, stopping with {dict(got)}")
                break
            cands += 1
            long_open = [n for n in lengths if n >= 6 and got[n] < need[n]]
            near = [(f, root) for f, k, root in pool
                    if long_open and k >= max(long_open) - 1 and per_root[root] < self.a.per_root]
            if near and self.rng.random() < self.a.mutate:
                parent, root = self.rng.choice(near)
                red = mutate(self.rng, parent)
                if red is None or not lo <= len(material(red)) <= hi:
                    continue
            else:
                att, dfd = material_fn(self.rng)
                if not lo <= 2 + len(att) + len(dfd) <= hi:
                    continue
                red = place(self.rng, att, dfd, "w", bias_fn(self.rng))
                if red is None:
                    continue
                root = red
            if red in tried:
                continue
            tried.add(red)
            sc = self.chk.screen(red, max(lengths))
            if sc is None or not any(wanted(n) for n in lengths if n <= sc[0]):
                continue
            k = sc[0]
            fen = self.orient(cat, red)
            if not self.new(fen):
                continue
            res = (self.chk.shortest_mate(fen, *sc, wanted) if fen == red
                   else self.chk.confirm_mate(fen, max(lengths), wanted))
            if res is None:
                if "not wanted" not in self.chk.why:
                    self.log(f"{cat}: candidate {cands} (screen mate {k}) not confirmed: {self.chk.why}")
                continue
            n, move, conf = res
            if not wanted(n) or per_root[root] >= self.a.per_root:
                continue
            got[n] += 1
            per_root[root] += 1
            if n >= 5:
                pool.append((red, n, root))
            self.add(fen, cat, f"mate {n}", move, conf)
            self.log(f"{cat}: #{sum(got.values())} mate {n} ({sig(material(fen))}, "
                     f"{'red' if fen.split()[1] == 'w' else 'black'}{', mutation' if root != red else ''}) "
                     f"after {cands} candidates; per length {dict(sorted(got.items()))}")
        self.log(f"{cat}: done, {sum(got.values())} positions from {cands} candidates")
        return got

    def gen_capture(self):
        got, per_target = Counter(), Counter()
        cands, total = 0, 0
        quota_t = -(-self.a.capture // len(CAPTURE_TARGETS))
        while total < self.a.capture and cands < self.a.max_candidates:
            if self.over_budget():
                self.log("capture: wall budget exceeded")
                break
            cands += 1
            open_t = [t for t in CAPTURE_TARGETS if per_target[t] < quota_t]
            ta, td = self.rng.choice(open_t)
            extras = [x for x in "abnrcp" if not (x in "ab" and td.count(x) >= 2)]
            x = self.rng.choice(extras)
            att, dfd = [ta], list(td)
            # place everything but the extra piece, then put the extra piece where Red attacks it
            base = place(self.rng, att, dfd, "w")
            if base is None:
                continue
            moves = sf.legal_moves(VARIANT, base, [])
            targets = [sq_of(m, 1) for m in moves if parse_fen(base)[0][sq_of(m, 0)[1]][sq_of(m, 0)[0]] == ta]
            g, _ = parse_fen(base)
            spots = [s for s in targets if s in points(x) and g[s[1]][s[0]] == "."]
            if not spots:
                continue
            f, r = self.rng.choice(spots)
            g[r][f] = x
            red = to_fen(g, "w")
            if not legal_fen(red):
                continue
            caps = [m for m in sf.legal_moves(VARIANT, red, []) if sq_of(m, 1) == (f, r)]
            if not caps:
                continue
            sc = self.chk.screen(red, self.a.capture_max_moves)
            if sc is None or sc[0] < 2:
                continue
            fen = self.orient("capture", red)
            if not self.new(fen):
                continue
            def wanted(n):
                return 2 <= n and got[n] < self.a.capture_per_length
            res = (self.chk.shortest_mate(fen, *sc, wanted) if fen == red
                   else self.chk.confirm_mate(fen, self.a.capture_max_moves, wanted))
            if res is None:
                if "not wanted" not in self.chk.why:
                    self.log(f"capture: candidate {cands} (screen mate {sc[0]}) not confirmed: {self.chk.why}")
                continue
            n, move, conf = res
            if n < 2 or got[n] >= self.a.capture_per_length:
                continue
            # the capture square in the written orientation
            cf, cr = (f, r) if fen.split()[1] == "w" else (8 - f, 9 - r)
            after = sig(material(sf.get_fen(VARIANT, fen, [move]))) if sq_of(move, 1) == (cf, cr) else None
            tgt = sig(material(sf.get_fen(VARIANT, fen, [[m for m in sf.legal_moves(VARIANT, fen, [])
                                                          if sq_of(m, 1) == (cf, cr)][0]])))
            got[n] += 1
            per_target[(ta, td)] += 1
            total += 1
            self.add(fen, "capture", f"mate {n}", move, conf + (f" cap={after}" if after else f" nocap(table={tgt})"))
            self.log(f"capture: #{total} mate {n} {sig(material(fen))} -> {tgt} "
                     f"(bestmove {'captures' if after else 'does not capture'}) after {cands} candidates")
        self.log(f"capture: done, {total} positions from {cands} candidates; per length {dict(sorted(got.items()))}")

    def gen_nomate(self):
        total, cands = 0, 0
        sides = Counter()
        while total < self.a.nomate and cands < self.a.max_candidates:
            if self.over_budget():
                self.log("nomate: wall budget exceeded")
                break
            cands += 1
            red, blk = nomate_material(self.rng)
            side = "w" if sides["w"] <= sides["b"] else "b"
            fen = place(self.rng, red, [p.lower() for p in blk], side)
            if fen is None or not self.new(fen):
                continue
            if self.chk.screen(fen, 9) is not None:
                continue
            res = self.chk.confirm_none(fen)
            if res is None:
                self.log(f"nomate: candidate {cands} not confirmed: {self.chk.why}")
                continue
            move, conf = res
            total += 1
            sides[side] += 1
            self.add(fen, "nomate", "none", move, conf)
            self.log(f"nomate: #{total} {sig(material(fen))} {'red' if side == 'w' else 'black'} to move "
                     f"after {cands} candidates")
        self.log(f"nomate: done, {total} positions from {cands} candidates")

    def gen_mated(self):
        src = [row for row in self.rows if row[1] in ("mate", "composed") and int(row[3].split()[1]) >= 2]
        # spread over the resulting lengths 1..8: round-robin over lengths, seeded order inside
        by_len = {}
        for row in src:
            by_len.setdefault(int(row[3].split()[1]) - 1, []).append(row)
        for v in by_len.values():
            self.rng.shuffle(v)
        order = []
        while any(by_len.values()):
            for k in sorted(by_len):
                if by_len[k]:
                    order.append(by_len[k].pop())
        total = 0
        for row in order:
            if total >= self.a.mated or self.over_budget():
                break
            fen, k = row[0], int(row[3].split()[1]) - 1
            nf = after_move(fen, to_fsf(row[4]))
            if not legal_fen(nf) or not self.new(nf):
                continue
            res = self.chk.confirm_mated(nf, k)
            if res is None:
                self.log(f"mated: from {row[1]} mate {k + 1} not confirmed: {self.chk.why}")
                continue
            move, conf = res
            total += 1
            self.add(nf, "mated", f"mated {k}", move, conf + f" from={row[4]}")
            self.log(f"mated: #{total} mated {k} ({sig(material(nf))})")
        self.log(f"mated: done, {total} positions")

    def run(self):
        a = self.a
        self.gen_mates("mate", quota(a.mate_quota), mate_material, mate_bias, 5, 10)
        self.gen_mates("composed", quota(a.composed_quota), composed_material, composed_bias, 9, 16)
        self.gen_capture()
        self.gen_nomate()
        self.gen_mated()
        self.eng.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="tests/data/mates.tsv")
    ap.add_argument("--engine", default="/usr/games/fairy-stockfish")
    ap.add_argument("--mate-quota", default="2=11,3=11,4=10,5=8,6=8,7=8,8=8,9=8")
    ap.add_argument("--composed-quota", default="3=3,4=3,5=3,6=3,7=3,8=3,9=3")
    ap.add_argument("--capture", type=int, default=20)
    ap.add_argument("--capture-per-length", type=int, default=4)
    ap.add_argument("--capture-max-moves", type=int, default=12)
    ap.add_argument("--nomate", type=int, default=20)
    ap.add_argument("--mated", type=int, default=20)
    ap.add_argument("--screen-nodes", type=int, default=200000)
    ap.add_argument("--short-nodes", type=int, default=1500000)
    ap.add_argument("--long-nodes", type=int, default=5000000)
    ap.add_argument("--deep-nodes", type=int, default=3000000)
    ap.add_argument("--max-candidates", type=int, default=20000)
    ap.add_argument("--mutate", type=float, default=0.6)
    ap.add_argument("--per-root", type=int, default=3)
    ap.add_argument("--call-seconds", type=float, default=60)
    ap.add_argument("--max-minutes", type=float, default=48)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    a = ap.parse_args()

    g = Gen(a)
    try:
        g.run()
    finally:
        g.eng.close()
    cut = g.over_budget()
    order = {"mate": 0, "composed": 1, "capture": 2, "mated": 3, "nomate": 4}
    rows = sorted(g.rows, key=lambda r: (order[r[1]], r[3].split()[0], int(r[3].split()[-1]) if r[3] != "none" else 0,
                                         r[2], int(r[6])))
    cmd = "python3 scripts/mate-positions.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    counts = Counter((r[1], r[3]) for r in rows)
    with open(a.out, "w") as fh:
        fh.write("# Xiangqi mate / no-mate test positions for the proof-number mate search.\n")
        fh.write(f"# generated by: {cmd}\n")
        fh.write(f"# checked with {ENGINE_VERSION} (Debian package 11.1-1+b1, {a.engine}; Threads 1, Hash 64; "
                 f"UCI_Variant xiangqi and {PURE} = xiangqi with every repetition a draw, both must agree) "
                 "and pyffish " + ".".join(map(str, sf.version())) + f"; date {a.date}\n")
        fh.write("# expect: 'mate N' = side to move mates in N moves (2N-1 plies); 'mated N' = side to move is "
                 "mated in N moves (2N plies); 'none' = no mate within 9 moves for the side to move and no mate "
                 "score for either side at depth 16\n")
        fh.write("# fsf_bestmove: FSF's best move in our ICCS (ranks 0..9); confirm: see the docstring of "
                 "scripts/mate-positions.py (short = node-capped search for a shorter mate found none; deep = "
                 "go depth search: depth reached/score/nodes; end = how FSF's PV ends)\n")
        fh.write("# 'confirmed' means FSF's verdict within the node caps given (a found mate is constructive; "
                 "'no shorter mate' and 'none' are not proofs)\n")
        fh.write(f"# counts: {', '.join(f'{c} {e}: {n}' for (c, e), n in sorted(counts.items(), key=lambda x: (order[x[0][0]], x[0][1])))}\n")
        if cut:
            fh.write("# NOTE: the wall-clock budget was exceeded; some categories are incomplete\n")
        fh.write("fen\tcategory\tside\texpect\tfsf_bestmove\tconfirm\tpieces\n")
        for r in rows:
            fh.write("\t".join(r) + "\n")
    g.log(f"wrote {len(rows)} positions to {a.out}; engine calls {g.eng.calls}, nodes {g.eng.nodes}, "
          f"timeouts {g.eng.timeouts}")
    for (c, e), n in sorted(counts.items(), key=lambda x: (order[x[0][0]], x[0][1])):
        print(f"{c}\t{e}\t{n}")


if __name__ == "__main__":
    main()
