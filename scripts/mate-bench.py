#!/usr/bin/env python3
"""Runs `xqtb search` and Fairy-Stockfish on a set of mate test positions and compares them.

For every position of a TSV written by scripts/mate-positions.py (columns fen, category, side,
expect, ...), it runs `xqtb search FEN --json --time T --threads N` and, for the positions with a
mate, Fairy-Stockfish (`go mate M` with the same threads, M the expected number of moves) and
reports per category: how many of our answers agree with the expected result and length (of
them, how many are a proven mate whose shorter alternatives the limits left open, `shortest:
false`; a proven mate shorter than expected counts apart: our proofs are checked move by move,
FSF's "no shorter mate" is a search within node caps), how many are a proven mate longer than
expected that is not claimed to be the shortest, how many are unknown, and any wrong claim (a
mate where none is expected, or a longer one claimed to be the shortest); then the median time to a proven mate, ours against
FSF's time to report the same mate, over the positions both solved, with our CPU seconds and our
largest peak memory over all positions.

Usage:
  python3 scripts/mate-bench.py --bin target/release/xqtb --data DIR tests/data/mates.tsv \
      [--time 10] [--threads 2] [--fsf /usr/games/fairy-stockfish] [--no-fsf]
`--data` is a table store with the small tables the `capture` positions run into (see the TSV's
header); without it those are searched without tables. Exit status 1 on any wrong claim.
"""
import argparse
import json
import statistics
import os
import subprocess
import sys
import tempfile
import time


def expected(expect):
    if expect.startswith("mate "):
        return "win", 2 * int(expect.split()[1]) - 1
    if expect.startswith("mated "):
        return "loss", 2 * int(expect.split()[1])
    return "none", None


def fsf_mate(fsf, fen, moves, threads, timeout):
    """FSF's time (s) to report `score mate` for `go mate moves`, or None."""
    p = subprocess.Popen([fsf], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write(f"uci\nsetoption name UCI_Variant value xiangqi\nsetoption name Threads value {threads}\n"
                  f"setoption name Hash value 64\nisready\n")
    p.stdin.flush()
    for line in p.stdout:
        if line.startswith("readyok"):
            break
    start = time.time()
    p.stdin.write(f"position fen {fen}\ngo mate {moves}\n")
    p.stdin.flush()
    found = None
    try:
        for line in p.stdout:
            if " score mate " in line and found is None:
                n = int(line.split(" score mate ")[1].split()[0])
                if n > 0:
                    found = (time.time() - start, n)
            if line.startswith("bestmove") or time.time() - start > timeout:
                break
    finally:
        p.kill()
    return found


def run_measured(cmd):
    """Runs `cmd`; returns (stdout, stderr, wall s, CPU s, peak resident MiB) of that process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.time()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, _, usage = os.wait4(p.pid, 0)
        wall = time.time() - start
        out.seek(0)
        err.seek(0)
        return (out.read().decode(), err.read().decode(), wall, usage.ru_utime + usage.ru_stime,
                usage.ru_maxrss / 1024)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tsv")
    ap.add_argument("--bin", default="target/release/xqtb")
    ap.add_argument("--data")
    ap.add_argument("--time", type=float, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fsf", default="/usr/games/fairy-stockfish")
    ap.add_argument("--no-fsf", action="store_true")
    args = ap.parse_args()
    rows = [l.rstrip("\n").split("\t") for l in open(args.tsv) if l.strip() and not l.startswith("#")]
    header, rows = rows[0], rows[1:]
    stats, ours_t, ours_cpu, fsf_t, wrong, peak = {}, [], [], [], [], 0.0
    for r in rows:
        d = dict(zip(header, r))
        want, plies = expected(d["expect"])
        cmd = [args.bin, "search", d["fen"], "--json", "--time", str(args.time), "--threads", str(args.threads)]
        if args.data:
            cmd += ["--data", args.data]
        stdout, stderr, took, cpu, rss = run_measured(cmd)
        peak = max(peak, rss)
        s = stats.setdefault(d["category"], {"n": 0, "same": 0, "bound": 0, "shorter": 0, "longer": 0,
                                             "unknown": 0, "wrong": 0})
        s["n"] += 1
        try:
            j = json.loads(stdout)
        except json.JSONDecodeError:
            wrong.append((d["fen"], stderr.strip()))
            s["wrong"] += 1
            continue
        got, got_plies, shortest = j["result"], j["dtm_plies"], j["shortest"]
        if want == "none":
            ok = got in ("unknown", "draw")
            s["same" if ok else "wrong"] += 1
            if not ok:
                wrong.append((d["fen"], f"{got} in {got_plies} plies where no mate is expected"))
        elif got == "unknown":
            s["unknown"] += 1
        elif got == want and got_plies == plies:
            s["same"] += 1
            s["bound"] += not shortest
            if want == "win" and shortest and not args.no_fsf:
                f = fsf_mate(args.fsf, d["fen"], (plies + 1) // 2, args.threads, 60)
                if f:
                    ours_t.append(took)
                    ours_cpu.append(cpu)
                    fsf_t.append(f[0])
        elif got == want and got_plies < plies:
            s["shorter"] += 1
            print(f"shorter: {d['fen']}: {got} in {got_plies} plies, expected {d['expect']}", flush=True)
        elif got == want and not shortest:
            s["longer"] += 1
        else:
            s["wrong"] += 1
            wrong.append((d["fen"], f"{got} in {got_plies} plies, expected {d['expect']}"))
        mark = "" if shortest or got_plies is None else " (at most)"
        print(f"{d['category']:9} {d['expect']:9} -> {got} {got_plies}{mark} {took:.2f}s nodes={j['nodes']}",
              flush=True)
    print()
    print("category   positions  same (at most)  shorter  longer (at most)  unknown  wrong")
    for c, s in stats.items():
        print(f"{c:10} {s['n']:9} {s['same']:5} {s['bound']:10} {s['shorter']:8} {s['longer']:17} "
              f"{s['unknown']:8} {s['wrong']:6}")
    mates = sum(s["n"] for c, s in stats.items() if c != "nomate")
    solved = sum(s["same"] + s["shorter"] for c, s in stats.items() if c != "nomate")
    bound = sum(s["bound"] for c, s in stats.items() if c != "nomate")
    print(f"mates proven with the expected length or shorter: {solved} of {mates} "
          f"({bound} of them not shown to be the shortest)")
    if ours_t:
        print(f"median time to a proven shortest mate: ours {statistics.median(ours_t):.2f} s "
              f"({statistics.median(ours_cpu):.2f} s CPU), FSF to report it "
              f"{statistics.median(fsf_t):.2f} s (over {len(ours_t)} positions)")
    print(f"our largest peak resident memory: {peak:.0f} MiB")
    for fen, why in wrong:
        print(f"WRONG {fen}: {why}")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
