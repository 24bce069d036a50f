#!/usr/bin/env python3
"""Cross-check xqtb's Asian-rule (repetition) verdicts against Fairy-Stockfish, an independent referee.

What it checks
--------------
For every signature given, the script
  1. samples N random *rule-decided* positions of the table: random legal placements of the table's
     pieces (seeded), side to move chosen at random, probed with `xqtb probe --batch --rules asian`;
     a position is kept when its JSON `rule` field is non-null (its value was decided by the
     repetition rules, not by mate);
  2. asks `xqtb mainline FEN --rules asian --json` for our main line (lead-in `moves` + `cycle`),
     replays it from the FEN until a position (board + side to move) repeats for the first time, and
     cuts out that cycle (the `cycle` list of mainline may start before the repeated position);
  3. plays the cycle twice from its first position in Fairy-Stockfish (variant "xiangqi": FSF needs the
     position to occur three times) and asks `pyffish.is_optional_game_end` who loses; our table says the
     side that loses at the sampled position (the value is kept along the main line);
  4. for the first --alt-positions sampled positions (and every "extra" stratified one, see --per-loser),
     also plays up to --alt-moves of the *loser's* alternative moves on the main line (lead-in or cycle;
     moves from `probe`'s move list, other than the main-line move, that keep the rule-decided value:
     category "win" for the opponent and a non-null `rule`), followed by our main line from there,
     finds the first repetition from the deviation point, and asks FSF again.
Legal positions that `probe` refuses (anything but "bad FEN", e.g. "inconsistent tables") and failed
probe/mainline calls on a line are counted and listed separately; they are not judged.
A line "agrees" when FSF names the same loser as our table. Lines that end in mate (no repetition) are
counted but not judged. Every disagreement is listed with the FEN of the cycle start, the cycle (ICCS),
which plies give check, and, for every ply, the opponent pieces the mover attacks after its move
(new or old attack, protected or not, by which piece types) so the disagreement can be classified.
Each judged cycle is also given to the binary's own referee (`xqtb adjudicate FEN MOVES --json`), which
implements our reading of the rules: when FSF disagrees with the table but `adjudicate` agrees with FSF,
the main line itself does not demonstrate the table's verdict (our rules and the table/main line differ);
when `adjudicate` agrees with the table, FSF's rules differ from ours on that cycle.

Requirements
------------
  pip install pyffish           # tested with pyffish 0.0.90 (Fairy-Stockfish 230826); chase code changes
                                # between releases, so pin the version when comparing runs
  an xqtb binary and a table store solved with `--rules asian` (dependencies included).

Usage
-----
  python3 scripts/fsf-crosscheck.py --bin /work/bin/xqtb-asian --data /tmp/asian-all \
      --n 100 --seed 1 --jsonl /tmp/fsf-crosscheck.jsonl KRvKN KRNvKR ...
Options: --n N (positions per table, default 100), --seed S (default 1), --max-probes M (random FENs
probed per table at most, default 2000000), --per-loser L (after the N uniform positions, keep sampling
until each colour is the loser in at least L positions, within --max-probes; default 0), --per-rule R
(likewise until each of perpetual-check and perpetual-chase is the probe's `rule` in at least R positions;
default 0; these extra positions are stratified, not uniform, and marked "extra"), --give-up G
(stop a table after G random FENs without a rule-decided position, default 500000), --alt-positions K
(default 30), --alt-moves J (default 3), --rules R (default asian), --jsonl FILE (one record per line
played), --md FILE (also write the summary table and the disagreement list as markdown).
Run it with a Python that has pyffish, e.g. `venv/bin/python scripts/fsf-crosscheck.py ...`.
Exit status: 0 when every judged line agrees and no probe failed, 1 otherwise.

Notation: our FENs/ICCS use ranks 0..9 from Red's side; FSF uses ranks 1..10 and needs side `w`/`b`
(the board text is identical). FSF's own verdict values are from the side to move at the end of the
replay: +VALUE_MATE = it wins, -VALUE_MATE = it loses, 0 = draw. FSF's 50-move rule fires before
repetitions, so cycles of 50+ plies are reported as "undecided".
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter, OrderedDict

try:
    import pyffish as sf
except ImportError:
    sys.exit("fsf-crosscheck.py needs pyffish: pip install pyffish  (tested with 0.0.90)")

VARIANT = "xiangqi"

# ----------------------------------------------------------------------------- board
# grid[r][f]: r = rank 0..9 (Red at the bottom), f = file 0..8 (a..i); '.' = empty.


def parse_fen(fen):
    parts = fen.split()
    rows = parts[0].split("/")
    assert len(rows) == 10, fen
    grid = [None] * 10
    for i, rt in enumerate(rows):
        row = []
        for ch in rt:
            if ch.isdigit():
                row += ["."] * int(ch)
            else:
                row.append({"E": "B", "e": "b", "H": "N", "h": "n"}.get(ch, ch))
        assert len(row) == 9, fen
        grid[9 - i] = row
    side = parts[1] if len(parts) > 1 else "w"
    return grid, ("w" if side in ("w", "r") else "b")


def board_text(grid):
    out = []
    for r in range(9, -1, -1):
        s, e = "", 0
        for c in grid[r]:
            if c == ".":
                e += 1
            else:
                if e:
                    s += str(e)
                    e = 0
                s += c
        if e:
            s += str(e)
        out.append(s)
    return "/".join(out)


def to_fen(grid, side):
    return f"{board_text(grid)} {side} - - 0 1"


def key(fen):
    g, s = parse_fen(fen)
    return board_text(g) + " " + s


def sq(m, i):
    return ord(m[2 * i]) - 97, int(m[2 * i + 1])


def apply_move(fen, m):
    g, s = parse_fen(fen)
    (f1, r1), (f2, r2) = sq(m, 0), sq(m, 1)
    assert g[r1][f1] != ".", (fen, m)
    g[r2][f2] = g[r1][f1]
    g[r1][f1] = "."
    return to_fen(g, "b" if s == "w" else "w")


def is_red(p):
    return p.isupper()


def color(p):
    return "w" if p.isupper() else "b"


# ----------------------------------------------------------------------------- a small move generator
# (only for describing cycles: which pieces are attacked, protected; FSF decides the verdicts)

def in_palace(f, r, c):
    return 3 <= f <= 5 and ((0 <= r <= 2) if c == "w" else (7 <= r <= 9))


def own_half(r, c):
    return r <= 4 if c == "w" else r >= 5


def pseudo_moves(g, f, r):
    p = g[r][f]
    c = color(p)
    t = p.upper()
    out = []

    def add(ff, rr):
        if 0 <= ff <= 8 and 0 <= rr <= 9:
            q = g[rr][ff]
            if q == "." or color(q) != c:
                out.append((ff, rr))

    if t == "K":
        for df, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if in_palace(f + df, r + dr, c):
                add(f + df, r + dr)
        # flying general: capture of the other king along an open file
        dr = 1 if c == "w" else -1
        rr = r + dr
        while 0 <= rr <= 9:
            q = g[rr][f]
            if q != ".":
                if q.upper() == "K" and color(q) != c:
                    out.append((f, rr))
                break
            rr += dr
    elif t == "A":
        for df, dr in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            if in_palace(f + df, r + dr, c):
                add(f + df, r + dr)
    elif t == "B":
        for df, dr in ((2, 2), (2, -2), (-2, 2), (-2, -2)):
            ff, rr = f + df, r + dr
            if 0 <= ff <= 8 and 0 <= rr <= 9 and own_half(rr, c) and g[r + dr // 2][f + df // 2] == ".":
                add(ff, rr)
    elif t == "N":
        for (lf, lr), targets in (((0, 1), ((1, 2), (-1, 2))), ((0, -1), ((1, -2), (-1, -2))),
                                  ((1, 0), ((2, 1), (2, -1))), ((-1, 0), ((-2, 1), (-2, -1)))):
            if 0 <= f + lf <= 8 and 0 <= r + lr <= 9 and g[r + lr][f + lf] == ".":
                for df, dr in targets:
                    add(f + df, r + dr)
    elif t in ("R", "C"):
        for df, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            ff, rr = f + df, r + dr
            screen = False
            while 0 <= ff <= 8 and 0 <= rr <= 9:
                q = g[rr][ff]
                if t == "R":
                    if q == ".":
                        out.append((ff, rr))
                    else:
                        if color(q) != c:
                            out.append((ff, rr))
                        break
                else:
                    if not screen:
                        if q == ".":
                            out.append((ff, rr))
                        else:
                            screen = True
                    elif q != ".":
                        if color(q) != c:
                            out.append((ff, rr))
                        break
                ff += df
                rr += dr
    elif t == "P":
        dr = 1 if c == "w" else -1
        add(f, r + dr)
        if not own_half(r, c):
            add(f + 1, r)
            add(f - 1, r)
    return out


def king_sq(g, c):
    k = "K" if c == "w" else "k"
    for r in range(10):
        for f in range(9):
            if g[r][f] == k:
                return f, r
    return None


def attacked_by(g, target, c):
    """Does side c (pseudo-legally) attack square target?"""
    for r in range(10):
        for f in range(9):
            p = g[r][f]
            if p != "." and color(p) == c and target in pseudo_moves(g, f, r):
                return True
    return False


def in_check(g, c):
    k = king_sq(g, c)
    return k is not None and attacked_by(g, k, "b" if c == "w" else "w")


def make(g, a, b):
    h = [row[:] for row in g]
    h[b[1]][b[0]] = h[a[1]][a[0]]
    h[a[1]][a[0]] = "."
    return h


def legal_captures(g, c):
    """[(from, to)] legal captures of side c (c treated as the side to move)."""
    out = []
    for r in range(10):
        for f in range(9):
            p = g[r][f]
            if p == "." or color(p) != c:
                continue
            for (ff, rr) in pseudo_moves(g, f, r):
                q = g[rr][ff]
                if q != "." and color(q) != c and q.upper() != "K":
                    if not in_check(make(g, (f, r), (ff, rr)), c):
                        out.append(((f, r), (ff, rr)))
    return out


def sqname(s):
    return f"{chr(97 + s[0])}{s[1]}"


def describe_ply(fen_before, move):
    """What the mover attacks after `move`: list of dicts per attacked opposing piece (king excluded)."""
    g, side = parse_fen(fen_before)
    opp = "b" if side == "w" else "w"
    before = {}
    for a, v in legal_captures(g, side):
        before.setdefault(v, []).append(a)
    a0, b0 = sq(move, 0), sq(move, 1)
    mover_piece = g[a0[1]][a0[0]]
    h = make(g, a0, b0)
    check = in_check(h, opp)
    targets = OrderedDict()
    for a, v in legal_captures(h, side):
        targets.setdefault(v, []).append(a)
    desc = []
    for v, atts in targets.items():
        victim = h[v[1]][v[0]]
        crossed = victim.upper() == "P" and not own_half(v[1], color(victim))
        prot = []
        for a in atts:
            # protected = after the capture the victim's side has a legal recapture on that square
            h2 = make(h, a, v)
            rec = [x for x in legal_captures_to(h2, opp, v)]
            prot.append(bool(rec))
        desc.append({
            "victim": victim + sqname(v),
            "attackers": [h[a[1]][a[0]] + sqname(a) for a in atts],
            "protected": prot,
            "new": [a not in before.get(v, []) or a == b0 for a in atts],
            "victim_is_uncrossed_pawn": victim.upper() == "P" and not crossed,
        })
    return {"move": move, "piece": mover_piece, "check": check, "attacks": desc}


def legal_captures_to(g, c, target):
    out = []
    for r in range(10):
        for f in range(9):
            p = g[r][f]
            if p != "." and color(p) == c and target in pseudo_moves(g, f, r):
                if not in_check(make(g, (f, r), target), c):
                    out.append((f, r))
    return out


# ----------------------------------------------------------------------------- FSF referee
def fsf_fen(fen):
    g, s = parse_fen(fen)
    return f"{board_text(g)} {s} - - 0 1"


def fsf_move(m):
    return f"{m[0]}{int(m[1]) + 1}{m[2]}{int(m[3]) + 1}"


def fsf_judge(fen, cycle):
    """Replay `cycle` (ICCS, returns to `fen`) until FSF adjudicates; result red-loses/black-loses/draw/
    undecided/error, plus per-ply check flags."""
    ffen = fsf_fen(fen)
    fm = [fsf_move(m) for m in cycle]
    raw = {"fsf_fen": ffen}
    if sf.validate_fen(ffen, VARIANT) != sf.FEN_OK:
        return {"result": "error", "error": "FSF rejects FEN", **raw}
    flipped = ffen.split()
    flipped[1] = "b" if flipped[1] == "w" else "w"
    if sf.gives_check(VARIANT, " ".join(flipped), []):  # pyffish may crash on such FENs
        return {"result": "error", "error": "side not to move is in check", **raw}
    checks = []
    for i, m in enumerate(fm):
        if m not in sf.legal_moves(VARIANT, ffen, fm[:i]):
            return {"result": "error", "error": f"ply {i + 1} {cycle[i]} illegal for FSF", **raw}
        checks.append(bool(sf.gives_check(VARIANT, ffen, fm[:i + 1])))
    raw["checks"] = "".join("+" if c else "." for c in checks)
    end = sf.get_fen(VARIANT, ffen, fm)
    if " ".join(end.split()[:2]) != " ".join(ffen.split()[:2]):
        return {"result": "error", "error": "not a cycle", **raw}
    full = fm * 2
    for k in range(len(full)):
        ge, v = sf.is_optional_game_end(VARIANT, ffen, full[:k])
        if ge:
            return {"result": "undecided", "reason": f"FSF ended the game after {k} plies (value {v})", **raw}
    stm = "red" if ffen.split()[1] == "w" else "black"
    other = "black" if stm == "red" else "red"
    for n in (2, 3):
        ge, v = sf.is_optional_game_end(VARIANT, ffen, fm * n)
        if ge:
            if n * len(fm) >= 100:
                return {"result": "undecided", "reason": "replay reaches 100 plies (50-move rule)", **raw}
            res = "draw" if v == 0 else (f"{other}-loses" if v > 0 else f"{stm}-loses")
            return {"result": res, "value": v, "cycles": n, **raw}
    return {"result": "undecided", "reason": "FSF did not adjudicate", **raw}


# ----------------------------------------------------------------------------- xqtb
class Xqtb:
    def __init__(self, binary, data, rules):
        self.b, self.data, self.rules = binary, data, rules
        self.calls = Counter()

    def _run(self, args, inp=None):
        for attempt in range(20):
            r = subprocess.run([self.b] + args + ["--rules", self.rules, "--data", self.data],
                               input=inp, capture_output=True, text=True)
            # the store admits one process at a time: wait and retry if another xqtb holds the lock
            if r.returncode != 0 and "could not acquire lock" in r.stderr:
                time.sleep(0.5 * (attempt + 1))
                continue
            break
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])}: exit {r.returncode}: {r.stderr.strip()[:300]}")
        return r.stdout

    def probe_batch(self, fens):
        self.calls["probe-batch"] += 1
        out = self._run(["probe", "--batch"], "\n".join(fens) + "\n")
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def probe(self, fen):
        self.calls["probe"] += 1
        return json.loads(self._run(["probe", fen, "--json"]))

    def mainline(self, fen):
        self.calls["mainline"] += 1
        return json.loads(self._run(["mainline", fen, "--json"]))

    def adjudicate(self, fen, moves):
        """Our own referee (`xqtb adjudicate`, Asian rules) on the same cycle: a second opinion that
        separates 'FSF rules differently' from 'the main line does not show the table's verdict'."""
        self.calls["adjudicate"] += 1
        r = subprocess.run([self.b, "adjudicate", fen] + list(moves) + ["--json"], capture_output=True, text=True)
        if r.returncode != 0:
            return {"result": "error", "error": r.stderr.strip()[:200]}
        return json.loads(r.stdout)


# ----------------------------------------------------------------------------- sampling
_ALLOWED = {}


def allowed_squares(t, c):
    if (t, c) not in _ALLOWED:
        _ALLOWED[(t, c)] = _allowed_squares(t, c)
    return _ALLOWED[(t, c)]


def _allowed_squares(t, c):
    sqs = []
    for f in range(9):
        for r in range(10):
            rr = r if c == "w" else 9 - r  # rank seen from this side
            if t == "K":
                ok = 3 <= f <= 5 and rr <= 2
            elif t == "A":
                ok = (f, rr) in ((3, 0), (5, 0), (4, 1), (3, 2), (5, 2))
            elif t == "B":
                ok = (f, rr) in ((2, 0), (6, 0), (0, 2), (4, 2), (8, 2), (2, 4), (6, 4))
            elif t == "P":
                ok = (rr in (3, 4) and f % 2 == 0) or rr >= 5
            else:
                ok = True
            if ok:
                sqs.append((f, r))
    return sqs


def random_fen(sig, rng):
    red, black = sig.split("v")
    pieces = [(t, "w") for t in red] + [(t, "b") for t in black]
    while True:
        g = [["."] * 9 for _ in range(10)]
        used = set()
        ok = True
        for t, c in pieces:
            cand = allowed_squares(t, c)
            for _ in range(100):
                s = rng.choice(cand)
                if s not in used:
                    break
            else:
                ok = False
                break
            used.add(s)
            g[s[1]][s[0]] = t if c == "w" else t.lower()
        if ok:
            return to_fen(g, rng.choice("wb"))


def sample(x, sig, n, rng, max_probes, per_loser=0, give_up=500000, per_rule=0):
    """n uniformly sampled rule-decided positions, then (stratification) more until each loser colour
    has at least per_loser positions and each rule (perpetual-check, perpetual-chase) at least per_rule,
    within max_probes random FENs; give up on a table that has shown no rule-decided position in
    give_up FENs."""
    found, seen, probed, legal = [], set(), 0, 0
    by_loser = Counter()
    by_rule = Counter()
    errors = []  # probe errors other than an illegal FEN (e.g. "inconsistent tables")
    chunk = 2000

    def done():
        return (len(found) >= n and all(by_loser[c] >= per_loser for c in ("red", "black"))
                and all(by_rule[r] >= per_rule for r in ("perpetual-check", "perpetual-chase")))

    while not done() and probed < max_probes and not (probed >= give_up and not found):
        if probed:
            chunk = min(chunk * 2, 50000)
        fens = [random_fen(sig, rng) for _ in range(min(chunk, max_probes - probed))]
        probed += len(fens)
        for d in x.probe_batch(fens):
            if "error" in d:
                if not d["error"].startswith("bad FEN"):
                    legal += 1
                    errors.append(d)
                continue
            legal += 1
            if not d.get("rule") or d["fen"] in seen:
                continue
            lo = loser_of(d, d["fen"])
            if len(found) < n or by_loser[lo] < per_loser or by_rule[d["rule"]] < per_rule:
                seen.add(d["fen"])
                d["extra"] = len(found) >= n  # kept only to fill a rare loser colour or rule
                found.append(d)
                by_loser[lo] += 1
                by_rule[d["rule"]] += 1
    return found, probed, legal, errors


# ----------------------------------------------------------------------------- lines
def first_cycle(fen, moves):
    """Play moves from fen; at the first repeated position return (index of its first occurrence,
    fen there, cycle moves). None if nothing repeats."""
    pos = [fen]
    seen = {key(fen): 0}
    for i, m in enumerate(moves):
        nxt = apply_move(pos[-1], m)
        k = key(nxt)
        if k in seen:
            j = seen[k]
            return j, pos[j], moves[j:i + 1], pos[j:i + 1]
        seen[k] = len(pos)
        pos.append(nxt)
    return None


def loser_of(probe_or_line, fen):
    _, s = parse_fen(fen)
    stm = "red" if s == "w" else "black"
    other = "black" if stm == "red" else "red"
    cat = probe_or_line["category"]
    return other if cat == "win" else (stm if cat == "loss" else None)


def judge_line(x, kind, root_fen, start_fen, moves, expected_loser, ml_end, extra=None):
    """Find the first repetition of `moves` played from `start_fen`, judge it with FSF."""
    rec = {"kind": kind, "root": root_fen, "from": start_fen, "line": moves, "our_end": ml_end,
           "expected_loser": expected_loser}
    if extra:
        rec.update(extra)
    fc = first_cycle(start_fen, moves)
    if fc is None:
        rec["status"] = "no-repetition"
        return rec
    j, cfen, cyc, cpos = fc
    rec.update(cycle_start=cfen, cycle=cyc, lead_in=moves[:j])
    t = time.perf_counter()
    v = fsf_judge(cfen, cyc)
    rec["fsf_ms"] = round((time.perf_counter() - t) * 1000, 1)
    rec["fsf"] = v
    adj = x.adjudicate(cfen, cyc)
    rec["ours"] = {"result": adj.get("result"), "offences": adj.get("offences"),
                   "classes": [c.get("text") for c in adj.get("cycle", [])]}
    rec["status"] = "judged"
    rec["agree"] = v["result"] == f"{expected_loser}-loses"
    rec["ours_agree"] = adj.get("result") == f"{expected_loser}-loses"
    if not rec["agree"]:
        rec["plies"] = [describe_ply(p, m) for p, m in zip(cpos, cyc)]
    return rec


def run_table(x, sig, args, rng, log):
    t0 = time.perf_counter()
    found, probed, legal, errors = sample(x, sig, args.n, rng, args.max_probes, args.per_loser, args.give_up,
                                          args.per_rule)
    st = {"sig": sig, "sampled": len(found), "probed": probed, "legal": legal, "main": 0, "alt": 0,
          "judged": 0, "agree": 0, "no_cycle": Counter(), "results": Counter(), "disagree": [],
          "ends": Counter(), "subtables": Counter(d.get("table") for d in found),
          "ours_agree": 0, "fsf_eq_ours": 0,
          "kinds": Counter(f"{d['side_to_move'][0]}{d['category'][0]}:{d['rule']}" for d in found),
          "extra": sum(1 for d in found if d.get("extra")),
          "loser_lines": Counter(), "loser_agree": Counter(), "probe_errors": errors, "line_errors": []}
    for idx, d in enumerate(found):
        root = d["fen"]
        loser = loser_of(d, root)
        try:
            ml = x.mainline(root)
        except RuntimeError as e:
            st["line_errors"].append({"fen": root, "error": str(e)})
            continue
        moves = [m["iccs"] for m in ml.get("moves") or []] + [m["iccs"] for m in ml.get("cycle") or []]
        st["ends"][ml.get("end")] += 1
        recs = []
        rec = judge_line(x, "main", root, root, moves, loser, ml.get("end"),
                         {"our_rule": d.get("rule"), "rule_plies": d.get("rule_plies")})
        recs.append(rec)
        st["main"] += 1
        if (idx < args.alt_positions or d.get("extra")) and rec["status"] == "judged":
            # loser-to-move positions on the line (lead-in and cycle), and the loser's other
            # rule-decided moves there
            cands = []
            line_fens = []
            p = root
            for m in rec["lead_in"] + rec["cycle"]:
                line_fens.append((p, m))
                p = apply_move(p, m)
            for p, m in line_fens:
                side = "red" if parse_fen(p)[1] == "w" else "black"
                if side != loser:
                    continue
                try:
                    pr = x.probe(p)
                except RuntimeError as e:
                    st["line_errors"].append({"fen": p, "error": str(e)})
                    continue
                for mv in pr.get("moves", []):
                    if mv["iccs"] != m and mv.get("category") == "win" and mv.get("rule"):
                        cands.append((p, mv["iccs"], m))
            rng.shuffle(cands)
            for p, a, mainmove in cands[:args.alt_moves]:
                p2 = apply_move(p, a)
                try:
                    ml2 = x.mainline(p2)
                except RuntimeError as e:
                    st["line_errors"].append({"fen": p2, "error": str(e)})
                    continue
                mv2 = [a] + [m["iccs"] for m in ml2.get("moves") or []] + [m["iccs"] for m in ml2.get("cycle") or []]
                st["ends"][ml2.get("end")] += 1
                r2 = judge_line(x, "alt", root, p, mv2, loser, ml2.get("end"),
                                {"deviation": a, "instead_of": mainmove})
                recs.append(r2)
                st["alt"] += 1
        for r in recs:
            if r["status"] != "judged":
                st["no_cycle"][f"{r['status']} (end={r['our_end']})"] += 1
            else:
                st["judged"] += 1
                st["results"][r["fsf"]["result"]] += 1
                st["ours_agree"] += r["ours_agree"]
                st["loser_lines"][r["expected_loser"]] += 1
                st["loser_agree"][r["expected_loser"]] += r["agree"]
                st["fsf_eq_ours"] += r["fsf"]["result"] == r["ours"]["result"]
                if r["agree"]:
                    st["agree"] += 1
                else:
                    st["disagree"].append(r)
            if log:
                log.write(json.dumps({"sig": sig, **r}) + "\n")
    st["seconds"] = round(time.perf_counter() - t0, 1)
    return st


# ----------------------------------------------------------------------------- report
def fmt_plies(plies):
    out = []
    for p in plies:
        atk = "; ".join(
            f"{a['victim']}<-" + ",".join(
                f"{att}{'' if new else '(old)'}{'[P]' if pr else '[U]'}"
                for att, new, pr in zip(a["attackers"], a["new"], a["protected"]))
            for a in p["attacks"])
        out.append(f"{p['move']}({p['piece']}{'+' if p['check'] else ''}{': ' + atk if atk else ''})")
    return " ".join(out)


def report(stats, args, md):
    w = print if md is None else (lambda s="": (print(s), md.write(s + "\n")))
    w("| table | positions sampled (stm+value:rule) | random FENs probed (legal) | main lines | alt. lines | "
      "lines judged | FSF agrees with table | FSF agrees, by loser | FSF results | `adjudicate` agrees with table "
      "| FSF = `adjudicate` | not judged | time |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in stats:
        res = ", ".join(f"{k} {v}" for k, v in sorted(s["results"].items()))
        nc = ", ".join(f"{k} {v}" for k, v in s["no_cycle"].items()) or "0"
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(s["kinds"].items()))
        bl = ", ".join(f"{c} loses {s['loser_agree'][c]}/{s['loser_lines'][c]}" for c in ("red", "black")
                       if s["loser_lines"][c])
        extra = f" incl. {s['extra']} extra" if s["extra"] else ""
        w(f"| {s['sig']} | {s['sampled']}{extra}{' (' + kinds + ')' if kinds else ''} | {s['probed']} ({s['legal']}) | "
          f"{s['main']} | {s['alt']} | {s['judged']} | {s['agree']} | {bl or '-'} | {res or '-'} | {s['ours_agree']} | "
          f"{s['fsf_eq_ours']} | {nc} | {s['seconds']} s |")
    w()
    w("stm+value: rw = Red to move wins, bl = Black to move loses, etc.; rule = the probe's `rule` field. "
      "'extra' = positions kept after the first N only because their loser colour or rule was rare "
      "(--per-loser, --per-rule).")
    w()
    for s in stats:
        if not (s["probe_errors"] or s["line_errors"]):
            continue
        w(f"### {s['sig']}: {len(s['probe_errors'])} legal random positions the probe refused, "
          f"{len(s['line_errors'])} failed probe/mainline calls on sampled lines")
        w()
        for e in (s["probe_errors"] + s["line_errors"])[:args.max_listed]:
            w(f"- `{e['fen']}`: {e['error'].splitlines()[0][:400]}")
        if len(s["probe_errors"] + s["line_errors"]) > args.max_listed:
            w(f"- ... ({len(s['probe_errors'] + s['line_errors']) - args.max_listed} more in the JSONL log)")
        w()
    for s in stats:
        if not s["disagree"]:
            continue
        w(f"### {s['sig']}: {len(s['disagree'])} disagreements")
        w()
        for r in s["disagree"]:
            dev = f" (loser deviates {r['deviation']} instead of {r['instead_of']})" if r["kind"] == "alt" else ""
            w(f"- {r['kind']}{dev}: root `{r['root']}`; our end {r['our_end']}, expected {r['expected_loser']} "
              f"loses, FSF {r['fsf']['result']}{' (' + r['fsf'].get('reason', r['fsf'].get('error', '')) + ')' if r['fsf'].get('reason') or r['fsf'].get('error') else ''}")
            w(f"  - cycle start `{r['cycle_start']}`, lead-in {' '.join(r['lead_in']) or '-'}, "
              f"cycle {' '.join(r['cycle'])}, checks {r['fsf'].get('checks', '?')}")
            w(f"  - plies: {fmt_plies(r['plies'])}")
            w(f"  - `xqtb adjudicate`: {r['ours']['result']} (offences {r['ours']['offences']}; "
              f"{', '.join(r['ours']['classes'])})")
        w()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sigs", nargs="+")
    ap.add_argument("--bin", default="xqtb")
    ap.add_argument("--data", default="./xqtb-data")
    ap.add_argument("--rules", default="asian")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-probes", type=int, default=2_000_000)
    ap.add_argument("--per-loser", type=int, default=0,
                    help="sample more until each colour appears as the loser at least this often")
    ap.add_argument("--per-rule", type=int, default=0,
                    help="sample more until each rule (perpetual-check/-chase) appears at least this often")
    ap.add_argument("--give-up", type=int, default=500_000,
                    help="stop a table after this many random FENs without one rule-decided position")
    ap.add_argument("--alt-positions", type=int, default=30)
    ap.add_argument("--alt-moves", type=int, default=3)
    ap.add_argument("--max-listed", type=int, default=20, help="probe errors listed per table in the report")
    ap.add_argument("--jsonl")
    ap.add_argument("--md")
    a = ap.parse_args()
    print(f"pyffish {'.'.join(map(str, sf.version()))} ({sf.info()}), binary {a.bin}, data {a.data}, "
          f"rules {a.rules}, n {a.n}, seed {a.seed}", flush=True)
    x = Xqtb(a.bin, a.data, a.rules)
    log = open(a.jsonl, "w") if a.jsonl else None
    stats = []
    for sig in a.sigs:
        rng = random.Random(f"{a.seed}:{sig}")
        s = run_table(x, sig, a, rng, log)
        if log:
            for e in s["probe_errors"]:
                log.write(json.dumps({"sig": sig, "kind": "probe-error", **e}) + "\n")
            for e in s["line_errors"]:
                log.write(json.dumps({"sig": sig, "kind": "line-error", **e}) + "\n")
        print(f"{sig}: sampled {s['sampled']} ({s['probed']} probed), judged {s['judged']}, agree {s['agree']}, "
              f"adjudicate agrees {s['ours_agree']}, probe errors {len(s['probe_errors'])}, "
              f"line errors {len(s['line_errors'])}, "
              f"{dict(s['results'])}, not judged {dict(s['no_cycle'])}, {s['seconds']} s", flush=True)
        stats.append(s)
    md = open(a.md, "w") if a.md else None
    report(stats, a, md)
    total_dis = sum(len(s["disagree"]) + len(s["probe_errors"]) + len(s["line_errors"]) for s in stats)
    return 1 if total_dis else 0


if __name__ == "__main__":
    sys.exit(main())
