#!/usr/bin/env python3
"""Regenerate the mock server's fixtures (web/dev/fixtures/*.json).

Not needed to run the mock or the test: the fixtures are checked in. This script only documents
where they come from and lets you refresh them after a format change.

    cargo build --release
    ./target/release/xqtb generate KRvKN KRvKR --data /tmp/xqdata
    python3 web/dev/make_fixtures.py --xqtb ./target/release/xqtb --data /tmp/xqdata

* krvkn.json, krvkr.json: real values from `xqtb probe/mainline --json` (rule set
  cycles-are-draws) for a few root positions, every position one move from them, and every
  position of their main lines. `wdl` is renamed to `category` and `rule`/`rule_plies` are added
  (null) so the files look like the HTTP API of the brief.
* asian.json: a HAND-MADE rule-decided line (values invented for UI tests, move lists and
  notation real): Red wins by rule because Black must keep checking in 3 plies.
* errors.json: positions the mock answers with an HTTP error.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")


def key(fen):
    parts = fen.replace("_", " ").split()
    return parts[0] + " " + (parts[1] if len(parts) > 1 else "w")


def fix(report):
    """CLI JSON -> API JSON of the brief."""
    report = dict(report)
    if "wdl" in report:
        report["category"] = report.pop("wdl")
    report.setdefault("rule", None)
    report.setdefault("rule_plies", None)
    moves = []
    for m in report.get("moves", []):
        m = dict(m)
        if "wdl" in m:
            m["category"] = m.pop("wdl")
        m.setdefault("rule", None)
        m.setdefault("rule_plies", None)
        moves.append(m)
    report["moves"] = moves
    return report


class Xqtb:
    def __init__(self, exe, data):
        self.exe, self.data = exe, data

    def run(self, *args):
        out = subprocess.run([self.exe, *args, "--data", self.data, "--json"],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    def probe(self, fen):
        return fix(self.run("probe", fen))

    def mainline(self, fen):
        return fix(self.run("mainline", fen))


def collect(xq, roots):
    probes, lines = {}, {}
    todo = []
    for root in roots:
        p = xq.probe(root)
        probes[key(p["fen"])] = p
        todo.append(p["fen"])
        for m in p["moves"]:
            todo.append(apply(p["fen"], m["iccs"]))
    for fen in todo:
        if key(fen) not in lines:
            ml = xq.mainline(fen)
            lines[key(fen)] = ml
            for pos in [fen] + [m["fen"] for m in ml["moves"]]:
                if key(pos) not in probes:
                    probes[key(pos)] = xq.probe(pos)
    # a main line from every position of a main line (the page asks from wherever you are)
    for fen in [p["fen"] for p in list(probes.values())]:
        if key(fen) not in lines and probes[key(fen)]["category"] != "draw":
            lines[key(fen)] = xq.mainline(fen)
    return probes, lines


def parse(fen):
    rows = fen.split()[0].split("/")
    board = {}
    for i, row in enumerate(rows):
        rank, f = 9 - i, 0
        for ch in row:
            if ch.isdigit():
                f += int(ch)
            else:
                board[(f, rank)] = ch
                f += 1
    return board, fen.split()[1]


def write(board, side):
    rows = []
    for rank in range(9, -1, -1):
        row, empty = "", 0
        for f in range(9):
            ch = board.get((f, rank))
            if ch:
                row += (str(empty) if empty else "") + ch
                empty = 0
            else:
                empty += 1
        rows.append(row + (str(empty) if empty else ""))
    return "/".join(rows) + " " + side + " - - 0 1"


def apply(fen, iccs):
    board, side = parse(fen)
    fr = (ord(iccs[0]) - 97, int(iccs[1]))
    to = (ord(iccs[2]) - 97, int(iccs[3]))
    board[to] = board.pop(fr)
    return write(board, "b" if side == "w" else "w")


def asian(xq):
    """Hand-made rule-decided values on real positions (KRvKR, rules 'asian').

    Black to move, Red threatens Rd5 mate; under cycles-are-draws Black holds by checking for ever
    (a3a0+, Ke1, a1+, Ke0, ...). Under the Asian rules perpetual check loses, so the values below
    are invented on that pattern: every position of the line is won for Red by rule, rule_plies
    counting down to the end of the 4-ply main line. Move lists and notation are real.
    """
    p0 = "3k5/9/9/9/8R/9/r8/9/9/4K4 b - - 0 1"
    line_moves = ["a3a0", "e0e1", "a0a1", "e1e0"]
    fens = [p0]
    for mv in line_moves:
        fens.append(apply(fens[-1], mv))
    n = len(line_moves)
    probes = {}
    for i, fen in enumerate(fens):
        p = xq.probe(fen)
        rp = n - i
        red = p["side_to_move"] == "red"
        p.update(rules="asian", category="win" if red else "loss", dtm_plies=None,
                 rule="perpetual-check", rule_plies=rp)
        best = line_moves[i] if i < n else None
        for m in p["moves"]:
            if m["iccs"] == best or (not red and m["category"] == "draw"):
                m.update(category="loss" if red else "win", dtm_plies=None,
                         rule="perpetual-check", rule_plies=max(rp - 1, 0))

        def order(m):  # best first for the mover: fastest win (mate, then rule), draw, slowest loss
            c, d, r = m["category"], m["dtm_plies"], m["rule_plies"]
            dist = d if d is not None else 100 + (r or 0)
            if c == "loss":
                return (0, dist)
            if c == "draw":
                return (1, 0)
            return (2, -dist)
        p["moves"].sort(key=order)
        probes[key(fen)] = p
    line = []
    for i, mv in enumerate(line_moves):
        m = next(m for m in probes[key(fens[i])]["moves"] if m["iccs"] == mv)
        line.append(dict(m, fen=fens[i + 1]))
    # how the offence goes on from the end until a position repeats (the API's `cycle`)
    cycle_src = [(4, "a1a0"), (1, "e0e1"), (2, "a0a1"), (3, "e1e0")]
    cycle = []
    for i, mv in cycle_src:
        m = next(m for m in probes[key(fens[i])]["moves"] if m["iccs"] == mv)
        cycle.append(dict(m, fen=apply(fens[i], mv)))
    lines = {}
    for i, fen in enumerate(fens):
        p = probes[key(fen)]
        lines[key(fen)] = {k: p[k] for k in ("fen", "side_to_move", "rules", "category",
                                              "dtm_plies", "rule", "rule_plies")}
        lines[key(fen)].update(plies=n - i, end="perpetual-check", moves=line[i:], cycle=cycle)
    return probes, lines, key(fens[1])  # example: Red to move, wins by rule in 3 plies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xqtb", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    xq = Xqtb(a.xqtb, a.data)
    sets = {
        "krvkn": ("cycles-are-draws", ["9/7R1/4k4/9/9/9/9/3n5/9/3K5 w",
                                       "5k3/9/9/9/9/R8/9/4n4/9/3K5 w"]),
        "krvkr": ("cycles-are-draws", ["9/3k5/9/9/9/9/7r1/9/5K3/6R2 w",
                                       "4k4/9/9/9/9/9/9/9/4A4/3K5 w"]),
    }
    os.makedirs(OUT, exist_ok=True)
    for name, (rules, roots) in sets.items():
        probes, lines = collect(xq, roots)
        doc = {"rules": rules, "examples": [key(r) for r in roots], "probe": probes, "mainline": lines}
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(doc, f, ensure_ascii=False, indent=0, sort_keys=True)
        print(name, len(probes), "positions,", len(lines), "main lines", file=sys.stderr)
    probes, lines, example = asian(xq)
    with open(os.path.join(OUT, "asian.json"), "w") as f:
        json.dump({"rules": "asian", "examples": [example], "probe": probes,
                   "mainline": lines}, f, ensure_ascii=False, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
