#!/usr/bin/env python3
"""Mock of the xqtb HTTP server for developing and testing the web page without Rust.

    python3 web/dev/mock_server.py [--port 8000] [--host 127.0.0.1] [--delay 0.15]

Serves web/index.html at `/` and the other files of web/ by name, and answers
  GET /api/v1/probe?fen=FEN&rules=RULES
  GET /api/v1/mainline?fen=FEN&rules=RULES
  GET /api/v1/tables
  GET /api/v1/search?fen=FEN&rules=RULES
from the JSON fixtures in web/dev/fixtures/ (keyed by board + side to move; see make_fixtures.py).
A search of a fixture position answers from its tables (`source: tables`, as the server does for
stored material); any other position's search answers `unknown`, stopped by the time limit.
A FEN that is malformed gets a 400, one listed in errors.json its error, any other a 404 naming its
endgame. --delay adds latency to every API answer so that loading states can be seen.
"""
import argparse
import json
import mimetypes
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
WEB = os.path.dirname(HERE)
FIXTURES = os.path.join(HERE, "fixtures")
DEFAULT_RULES = "cycles-are-draws"

PROBES = {}      # (rules, key) -> probe report
MAINLINES = {}   # (rules, key) -> main line report
ERRORS = {}      # key -> {"status", "error"}
EXAMPLES = {}    # rules -> [key, ...]


def load_fixtures():
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
            doc = json.load(f)
        if name == "errors.json":
            ERRORS.update({k: v for k, v in doc.items() if not k.startswith("_")})
            continue
        rules = doc["rules"]
        for k, v in doc["probe"].items():
            PROBES[(rules, k)] = v
        for k, v in doc["mainline"].items():
            MAINLINES[(rules, k)] = v
        EXAMPLES.setdefault(rules, []).extend(doc.get("examples", []))


class BadFen(Exception):
    pass


LIMITS = {"k": 1, "a": 2, "b": 2, "n": 2, "r": 2, "c": 2, "p": 5}


def parse_fen(fen):
    """Returns (key, board dict) or raises BadFen with a message naming the fault."""
    fields = fen.replace("_", " ").split()
    if not fields:
        raise BadFen("empty FEN")
    rows = fields[0].split("/")
    if len(rows) != 10:
        raise BadFen(f"bad FEN: {len(rows)} rows, expected 10")
    board, out_rows = {}, []
    for i, row in enumerate(rows):
        rank, f, out = 9 - i, 0, ""
        for ch in row:
            if ch.isdigit():
                f += int(ch)
                out += ch
                continue
            low = {"e": "b", "h": "n"}.get(ch.lower(), ch.lower())
            if low not in LIMITS:
                raise BadFen(f"bad FEN: unknown piece letter '{ch}' in row {i + 1}")
            piece = low.upper() if ch.isupper() else low
            board[(f, rank)] = piece
            out += piece
            f += 1
        if f != 9:
            raise BadFen(f"bad FEN: row {i + 1} ('{row}') is {f} points wide, expected 9")
        out_rows.append(out)
    side = fields[1].lower() if len(fields) > 1 else "w"
    if side == "r":
        side = "w"
    if side not in ("w", "b"):
        raise BadFen(f"bad FEN: side to move '{fields[1]}' is not w or b")
    for p, n in LIMITS.items():
        for q, colour in ((p.upper(), "Red"), (p, "Black")):
            count = sum(1 for v in board.values() if v == q)
            if p == "k" and count == 0:
                raise BadFen(f"illegal position: {colour} has no king")
            if count > n:
                raise BadFen(f"illegal position: {colour} has {count} of '{q}', at most {n}")
    kings = {v: s for s, v in board.items() if v in "Kk"}
    (rf, rr), (bf, br) = kings["K"], kings["k"]
    if rf == bf and not any((rf, r) in board for r in range(rr + 1, br)):
        raise BadFen("illegal position: the kings face each other on an open file")
    # normalise digits (e.g. "45" -> "9") the way the page writes FENs
    norm = []
    for rank in range(9, -1, -1):
        row, empty = "", 0
        for f in range(9):
            v = board.get((f, rank))
            if v:
                row += (str(empty) if empty else "") + v
                empty = 0
            else:
                empty += 1
        norm.append(row + (str(empty) if empty else ""))
    return "/".join(norm) + " " + side, board


def signature(board):
    def side(upper):
        ps = [v.upper() for v in board.values() if v.isupper() == upper]
        return "K" + "".join(sorted((p for p in ps if p != "K"), key="RNCPAB".index))
    weight = {"R": 9, "N": 4, "C": 4.5, "P": 1, "A": 0.2, "B": 0.2, "K": 0}
    red, black = side(True), side(False)
    w = lambda s: sum(weight[c] for c in s)  # noqa: E731
    return f"{red}v{black}" if w(red) >= w(black) else f"{black}v{red}"


class Handler(BaseHTTPRequestHandler):
    delay = 0.0
    server_version = "xqtb-mock/1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mock: " + (fmt % args) + "\n")

    def send_json(self, status, obj):
        body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path.startswith("/api/"):
            time.sleep(self.delay)
            return self.api(url.path, parse_qs(url.query))
        name = "index.html" if url.path == "/" else url.path.lstrip("/")
        path = os.path.normpath(os.path.join(WEB, name))
        if (not path.startswith(WEB + os.sep) or os.sep + "dev" + os.sep in path[len(WEB):]
                or not os.path.isfile(path)):
            return self.send_json(404, {"error": f"no such file: {url.path}"})
        with open(path, "rb") as f:
            body = f.read()
        ctype = mimetypes.guess_type(path)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype.endswith("javascript"):
            ctype += "; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def api(self, path, query):
        if path == "/api/v1/tables":
            tables = []
            for rules, keys in EXAMPLES.items():
                seen = set()
                for k in keys:
                    t = PROBES.get((rules, k), {}).get("table")
                    if t and t not in seen:
                        seen.add(t)
                        tables.append({"table": t, "rules": rules, "example_fen": k})
            return self.send_json(200, {"tables": tables})
        if path not in ("/api/v1/probe", "/api/v1/mainline", "/api/v1/search"):
            return self.send_json(404, {"error": f"no such endpoint: {path}"})
        fen = query.get("fen", [""])[0]
        rules = query.get("rules", [DEFAULT_RULES])[0] or DEFAULT_RULES
        if not fen:
            return self.send_json(400, {"error": "missing parameter fen"})
        if rules not in EXAMPLES:
            return self.send_json(400, {"error": f"unknown rule set '{rules}'; available: "
                                                 + ", ".join(sorted(EXAMPLES))})
        try:
            key, board = parse_fen(fen)
        except BadFen as e:
            return self.send_json(400, {"error": str(e)})
        if key in ERRORS:
            return self.send_json(ERRORS[key]["status"], {"error": ERRORS[key]["error"]})
        if path.endswith("search"):
            return self.send_json(200, search_report(rules, key, fen))
        store = PROBES if path.endswith("probe") else MAINLINES
        report = store.get((rules, key))
        if report is None:
            if path.endswith("mainline") and (rules, key) in PROBES:
                p = PROBES[(rules, key)]
                report = {k: p[k] for k in ("fen", "side_to_move", "rules", "category",
                                            "dtm_plies", "rule", "rule_plies")}
                report.update(plies=0, end="draw", moves=[])
            else:
                sig = signature(board)
                extra = "" if rules == DEFAULT_RULES else f" under the {rules} rules"
                return self.send_json(404, {"error": f"This endgame ({sig}) is not in the "
                                                     f"tablebase{extra}"})
        return self.send_json(200, report)


# The limits a server applies to a search that asks for none (as in docs/http-api.md).
SEARCH_LIMITS = {"max_plies": 41, "nodes": 20000000, "time_ms": 10000, "threads": 1, "hash_mib": 64}


def search_report(rules, key, fen):
    """A search's answer: the tables' for a fixture position, else unknown."""
    probe, line = PROBES.get((rules, key)), MAINLINES.get((rules, key))
    report = {"fen": fen, "side_to_move": "red" if key.endswith(" w") else "black", "rules": rules,
              "result": "unknown", "dtm_plies": None, "shortest": False, "best_move": None,
              "line": [], "end": None, "source": "search", "searched_plies": 12, "nodes": 4000000,
              "table_hits": 0, "time_ms": SEARCH_LIMITS["time_ms"], "stopped": "time",
              "limits": SEARCH_LIMITS}
    if probe is None:
        return report
    moves = [{k: m[k] for k in ("iccs", "chinese", "wxf")} for m in (line or {}).get("moves", [])]
    decided = probe["category"] in ("win", "loss")
    report.update(fen=probe["fen"], result=probe["category"], source="tables", searched_plies=0,
                  nodes=0, time_ms=1, stopped=None, line=moves,
                  best_move=moves[0]["iccs"] if moves else None,
                  dtm_plies=probe["dtm_plies"] if probe["dtm_plies"] is not None else probe["rule_plies"],
                  shortest=decided, end=(line or {}).get("end", "draw"))
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--delay", type=float, default=0.15, help="seconds added to API answers")
    a = ap.parse_args()
    load_fixtures()
    Handler.delay = a.delay
    srv = ThreadingHTTPServer((a.host, a.port), Handler)
    print(f"mock xqtb server on http://{a.host}:{srv.server_address[1]}/ "
          f"({len(PROBES)} positions)", file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
