#!/usr/bin/env python3
"""End-to-end test of the xqtb web page in headless Chromium (Selenium).

    python3 web/dev/test_page.py BASE_URL SCREENSHOT_DIR [--fen FEN] [--missing-fen FEN]

    e.g.  python3 web/dev/mock_server.py --port 8765 &
          python3 web/dev/test_page.py http://127.0.0.1:8765/ /tmp/xqtb-shots

Works against the mock (web/dev/mock_server.py) or the real server: expected texts are computed
from the server's own API answers, so --fen may be any won position the server has.
Needs: pip install selenium; apt-get install -y chromium chromium-driver (/usr/bin/chromium,
/usr/bin/chromedriver). Exits 0 when every check passed, 1 with "FAIL: ..." otherwise (a
screenshot "failure.png" is left in SCREENSHOT_DIR).

The page brings its own CJK glyphs (web/glyphs.js), and the test checks that they are what is
drawn, on a machine with or without CJK fonts: it crops the screen to each piece's face, each river
character and each character of a move's Chinese notation, maps the pixels to ink / no ink by
luminance (whatever the colour), and asserts that every crop has ink and that crops of different
characters differ (missing-glyph boxes would be alike). The crops are kept as glyph-*.png.

Stable selectors the test relies on (all in web/index.html, web/board.js, web/app.js):
  #app[data-state]            "loading" | "ready" | "error": the probe of the shown position
  #app[data-mainline]         "loading" while a main line request runs (absent otherwise)
  [data-testid=fen-input]     FEN text box (shows the current position's FEN)
  [data-testid=fen-load]      its submit button ("Probe"); Enter in the box works too
  [data-testid=value]         the value in words ("Red wins in 15 plies (8 moves)")
  [data-testid=stm]           side to move ("Red to move"); class red | black
  [data-testid=error]         error box (hidden when there is none)
  [data-testid=board]         the <svg> board
  [data-testid=pt-e0]         click target of point e0 (ICCS square), for every point a0..i9
  [data-testid=piece-e0]      the piece on e0, with data-piece="K" (FEN letter); class "selected"
  #board .piece .char         the piece's character (a <path> from glyphs.js, data-char)
  #board .river-char          the river's four characters (likewise)
  [data-testid=move] .zh      a move's Chinese notation (text in the font "xqtb glyphs")
  #board .target              legal destination marks of the selected piece; .corners.last = last move
  [data-testid=move]          one legal move button, data-iccs="h2e2", data-result = win|draw|loss
                              (result for the mover), best first
  [data-testid=nav-start|nav-back|nav-forward|nav-end|nav-play|flip]   navigation buttons
  [data-testid=line-move]     the moves of the line, data-index (0 = start); class "current"
  [data-testid=line-end]      how the main line ends, after its last move
  [data-testid=tables]        list of endgames (from /api/v1/tables)
  [data-testid=solve]         the Solve button (disabled, "Solving…", while its search runs)
  #app[data-search]           "loading" while a search runs (absent otherwise)
  [data-testid=solve-result]  the search's answer in words, data-result = win|loss|draw|unknown,
                              data-source = tables|search; its line goes into the line panel
  [data-testid=solve-stats]   where the answer comes from, positions searched, time
"""
import argparse
import base64
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

os.environ.setdefault("SE_AVOID_STATS", "true")

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    sys.exit("FAIL: selenium is not installed (pip install selenium)")

DEFAULT_FEN = "9/7R1/4k4/9/9/9/9/3n5/9/3K5 w"
MISSING_FEN = "4k4/9/4n4/9/9/9/9/2R6/2R6/4K4 w"
# A forced mate in 3 plies by two rooks: a win the search proves without tables (which of its
# shortest lines it answers is the search's choice; the expectations come from the API).
SOLVE_FEN = "4k4/9/9/9/9/9/9/9/R8/1R1K5 w"


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# ------------------------------------------------------------------ expectations from the API
class Api:
    def __init__(self, base):
        self.base = base.rstrip("/")

    def get(self, kind, fen):
        url = f"{self.base}/api/v1/{kind}?fen={urllib.parse.quote(fen)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return r.status, json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read().decode() or "{}")


def key(fen):
    f = fen.replace("_", " ").split()
    return f[0] + " " + (f[1] if len(f) > 1 else "w")


def cat(v):
    return v.get("category") or v.get("wdl")


def plies(n):
    return f"{n} {'ply' if n == 1 else 'plies'}"


def expected_value(report, end=None):
    """The page's wording (see describe() in app.js)."""
    who = "Red" if report["side_to_move"] == "red" else "Black"
    oth = "Black" if who == "Red" else "Red"
    c, d = cat(report), report.get("dtm_plies")
    if report.get("rule"):
        loser = oth if c == "win" else who
        verb = {"perpetual-check": "keep checking (perpetual check)",
                "perpetual-chase": "keep chasing (perpetual chase)"}[report["rule"]]
        rp = report.get("rule_plies")
        when = f"in {plies(rp)}" if rp else "now"
        return f"{who} {'wins' if c == 'win' else 'loses'} by rule: {loser} must {verb} {when}"
    if c == "win":
        m = math.ceil(d / 2)
        return f"{who} wins in {plies(d)} ({m} {'move' if m == 1 else 'moves'})"
    if c == "loss":
        if d == 0:
            if end == "mate":
                return f"{who} is checkmated"
            if end == "stalemate":
                return f"{who} is stalemated and loses (no legal move)"
            return None  # either wording
        return f"{who} loses in {plies(d)}"
    return "Draw"


# ------------------------------------------------------------------ pixels
def png_gray(data):
    """Luminance rows (0..255) of an 8-bit, non-interlaced RGB / RGBA / gray PNG (what Chromium
    writes); no imaging library needed."""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "a screenshot is not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    check(depth == 8 and interlace == 0 and ctype in (0, 2, 4, 6), f"unexpected PNG type {ctype}/{depth}")
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                c = prev[i - bpp] if i >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if ctype in (0, 4):
            rows.append([line[x * bpp] for x in range(w)])
        else:
            rows.append([(299 * line[x * bpp] + 587 * line[x * bpp + 1] + 114 * line[x * bpp + 2]) // 1000
                         for x in range(w)])
    return rows


def ink(rows, below, disk=False):
    """The set of (x, y) whose luminance is below `below` (within the inscribed disk if `disk`)."""
    h, w = len(rows), len(rows[0])
    r2 = (min(w, h) / 2) ** 2
    return {(x, y) for y in range(h) for x in range(w) if rows[y][x] < below
            and (not disk or (x + 0.5 - w / 2) ** 2 + (y + 0.5 - h / 2) ** 2 <= r2)}


def unlike(a, b):
    """How much two ink sets differ: |a xor b| / |a or b| (0 alike .. 1 nothing in common)."""
    return len(a ^ b) / max(1, len(a | b))


def fonts_zh():
    """How many CJK fonts the machine has (the page must not need any); None if unknown."""
    try:
        out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=20)
        return len([ln for ln in out.stdout.splitlines() if ln.strip()])
    except Exception:
        return None


# ------------------------------------------------------------------ browser helpers
class Page:
    def __init__(self, base, shots):
        self.base, self.shots = base, shots
        self.profile = tempfile.mkdtemp(prefix="xqtb-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = "/usr/bin/chromium"
        for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
                  "--window-size=1280,900", "--hide-scrollbars", "--lang=en-US"):
            opts.add_argument(a)
        self.d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
        self.viewport(1280, 900)

    def close(self):
        try:
            self.d.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def viewport(self, w, h, mobile=False):
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": w, "height": h, "deviceScaleFactor": 1, "mobile": mobile})
        time.sleep(0.2)

    def q(self, testid):
        return self.d.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def qa(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def wait(self, pred, what, timeout=15):
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.05).until(lambda d: pred())
        except Exception:
            raise Fail(f"timed out after {timeout}s waiting for {what}")

    def state(self):
        return self.d.find_element(By.ID, "app").get_attribute("data-state")

    def shown_fen(self):
        return key(self.q("fen-input").get_attribute("value"))

    def wait_position(self, fen, states=("ready",), timeout=15):
        self.wait(lambda: self.shown_fen() == key(fen) and self.state() in states,
                  f"position {key(fen)} to be shown and probed (now {self.shown_fen()!r}, "
                  f"state {self.state()!r})", timeout)

    def value(self):
        return self.q("value").text.strip()

    def shot(self, name, full=False):
        path = os.path.join(self.shots, name)
        if full:
            import base64
            data = self.d.execute_cdp_cmd("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True, "fromSurface": True})
            with open(path, "wb") as f:
                f.write(base64.b64decode(data["data"]))
        else:
            self.d.save_screenshot(path)
        print(f"  screenshot {path}")

    def crop(self, box, name, scale=1):
        """A screenshot of the page region box = (left, top, width, height) in CSS px of the
        viewport, kept as `name` in the screenshot directory; its PNG bytes."""
        x, y, w, h = box
        data = self.d.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "fromSurface": True,
            "clip": {"x": x + self.d.execute_script("return window.scrollX"),
                     "y": y + self.d.execute_script("return window.scrollY"),
                     "width": w, "height": h, "scale": scale}})
        png = base64.b64decode(data["data"])
        with open(os.path.join(self.shots, name), "wb") as f:
            f.write(png)
        return png

    def piece(self, sq):
        els = self.qa(f'[data-testid="piece-{sq}"]')
        return els[0] if els else None

    def enter_fen(self, fen):
        box = self.q("fen-input")
        box.click()
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.DELETE)
        box.send_keys(fen)
        box.send_keys(Keys.ENTER)

    def rect(self, testid_or_css):
        return self.d.execute_script(
            "const e = document.querySelector(arguments[0]); const r = e.getBoundingClientRect();"
            "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width};",
            testid_or_css)


# ------------------------------------------------------------------ the test
def run(base, shots, fen, missing_fen):
    api = Api(base)
    st, root = api.get("probe", fen)
    check(st == 200, f"the API cannot probe the test position {fen!r}: {st} {root}")
    check(cat(root) == "win" and root["moves"], f"the test position must be a win with moves, is {cat(root)}")

    p = Page(base, shots)
    try:
        step = "load the page"
        print("- " + step)
        p.d.get(base)
        p.wait(lambda: p.state() in ("ready", "error"), "the first probe")
        check(p.qa('[data-testid^="piece-"]'), "no pieces on the board after loading")
        check(len(p.qa('[data-testid^="pt-"]')) == 90, "the board does not have 90 click targets")

        print("- enter a FEN with Enter")
        p.enter_fen(fen)
        p.wait_position(fen)
        exp = expected_value(root)
        check(p.value() == exp, f"value text is {p.value()!r}, expected {exp!r}")
        exp_stm = "Red to move" if root["side_to_move"] == "red" else "Black to move"
        check(p.q("stm").text.strip() == exp_stm, f"side to move shows {p.q('stm').text!r}")
        check(p.q("error").get_attribute("hidden") is not None, "an error is shown for a good position")
        check(f"fen={key(fen).split()[0]}" in p.d.current_url, f"URL has no fen: {p.d.current_url}")
        moves = p.qa('[data-testid="move"]')
        check(len(moves) == len(root["moves"]),
              f"move list has {len(moves)} moves, the API {len(root['moves'])}")
        check(moves[0].get_attribute("data-iccs") == root["moves"][0]["iccs"], "move list is not best first")
        check(moves[0].get_attribute("data-result") == "win", "the best move is not shown as a win")
        zh = moves[0].find_element(By.CSS_SELECTOR, ".zh").text
        check(zh == root["moves"][0]["chinese"], f"Chinese notation {zh!r} != {root['moves'][0]['chinese']!r}")
        results = {m.get_attribute("data-result") for m in moves}
        print(f"  value {p.value()!r}; {len(moves)} moves, results {sorted(results)}")
        p.shot("desktop-1-position.png")

        check_glyphs(p)

        print("- click a winning move on the board: piece, then point")
        best = root["moves"][0]
        fr, to = best["iccs"][:2], best["iccs"][2:]
        letter = p.piece(fr).get_attribute("data-piece")
        p.q(f"pt-{fr}").click()
        p.wait(lambda: "selected" in (p.piece(fr).get_attribute("class") or ""), "the piece to be selected")
        n_targets = len([m for m in root["moves"] if m["iccs"].startswith(fr)])
        marks = p.qa("#board .target")
        check(len(marks) == n_targets, f"{len(marks)} destination marks, {n_targets} legal destinations")
        p.shot("desktop-2-selected.png")
        p.q(f"pt-{to}").click()
        st, after = api.get("probe", best_fen := apply(fen, best["iccs"]))
        check(st == 200, f"the API cannot probe the position after {best['iccs']}: {st}")
        p.wait_position(best_fen)
        check(p.piece(fr) is None, f"a piece is still on {fr} after the move")
        check(p.piece(to) is not None and p.piece(to).get_attribute("data-piece") == letter,
              f"the moved piece {letter} is not on {to}")
        check(len(p.qa("#board .corners.last")) == 2, "the last move is not highlighted")
        exp = expected_value(after)
        check(p.value() == exp, f"after the move the value is {p.value()!r}, expected {exp!r}")
        check("Black" in p.q("stm").text if root["side_to_move"] == "red" else "Red" in p.q("stm").text,
              "the side to move did not change")
        check(f"fen={key(best_fen).split()[0]}" in p.d.current_url, "the URL did not follow the move")
        print(f"  after {best['iccs']}: {p.value()!r}")
        p.shot("desktop-3-after-move.png")

        print("- play the main line to the end (Play button, on a timer)")
        st, ml = api.get("mainline", best_fen)
        check(st == 200 and ml["moves"], f"no main line from {best_fen}: {st}")
        final = ml["moves"][-1]["fen"]
        p.q("nav-play").click()
        p.wait(lambda: "Pause" in p.q("nav-play").text, "the Play button to turn into Pause", 5)
        p.wait_position(final, timeout=5 + 2 * len(ml["moves"]))
        p.wait(lambda: "Pause" not in p.q("nav-play").text, "playing to stop at the end", 5)
        st, last = api.get("probe", final)
        exp = expected_value(last, ml.get("end"))
        if exp:
            check(p.value() == exp, f"at the end the value is {p.value()!r}, expected {exp!r}")
        check(p.q("nav-forward").get_attribute("disabled") is not None, "forward is enabled at the end")
        check(p.qa('[data-testid="line-end"]'), "the end of the main line is not labelled")
        cur = p.qa('[data-testid="line-move"].current')
        check(cur and cur[0].get_attribute("data-index") == str(1 + len(ml["moves"])),
              "the last move of the line is not the current one")
        print(f"  end after {ml['plies']} plies ({ml.get('end')}): {p.value()!r}")
        p.shot("desktop-4-mainline-end.png")

        print("- keys and buttons: ← Home End, start/back/forward")
        body = p.d.find_element(By.TAG_NAME, "body")
        body.send_keys(Keys.ARROW_LEFT)
        p.wait_position(ml["moves"][-2]["fen"] if len(ml["moves"]) > 1 else best_fen)
        body.send_keys(Keys.HOME)
        p.wait_position(fen)
        p.q("nav-forward").click()
        p.wait_position(best_fen)
        p.q("nav-end").click()
        p.wait_position(final)
        p.q("nav-start").click()
        p.wait_position(fen)
        p.q("nav-forward").click()
        p.wait_position(best_fen)

        print("- browser back / forward")
        p.d.back()
        p.wait_position(fen)
        check(p.value() == expected_value(root), "back did not restore the value")
        p.d.forward()
        p.wait_position(best_fen)

        print("- flip the board")
        y_red_king = lambda: p.rect('[data-testid^="piece-"][data-piece="K"]')["top"]  # noqa: E731
        y_black_king = lambda: p.rect('[data-testid^="piece-"][data-piece="k"]')["top"]  # noqa: E731
        check(y_red_king() > y_black_king(), "Red is not at the bottom")
        p.q("flip").click()
        p.wait(lambda: y_red_king() < y_black_king(), "the board to flip")
        p.shot("desktop-5-flipped.png")
        p.q("flip").click()

        print("- errors: a bad FEN and a position the server refuses")
        p.enter_fen("9/9/9 w")
        p.wait(lambda: p.q("error").is_displayed(), "an error for a malformed FEN")
        check("rows" in p.q("error").text, f"bad-FEN message is {p.q('error').text!r}")
        check(f"fen={key(best_fen).split()[0]}" in p.d.current_url and p.piece(to) is not None,
              "a malformed FEN replaced the shown position")
        st, body_ = api.get("probe", missing_fen)
        if st != 200:
            p.enter_fen(missing_fen)
            p.wait_position(missing_fen, states=("error",))
            text = p.q("error").text
            check(body_.get("error", "") in text, f"error box {text!r} lacks the server message")
            check(not p.qa('[data-testid="move"]'), "moves are listed for a position that failed")
            print(f"  {st}: {text!r}")
            p.shot("desktop-6-error.png")
        else:
            print(f"  (skipped: the server has {missing_fen})")

        check_solve(p, api, fen)

        print("- layout: desktop puts the moves beside the board")
        p.enter_fen(fen)
        p.wait_position(fen)
        b, m = p.rect('[data-testid="board"]'), p.rect(".moves-panel")
        check(m["left"] >= b["right"] - 1, f"moves panel is not beside the board: {b} {m}")

        print("- phone (390x844)")
        p.viewport(390, 844, mobile=True)
        p.d.refresh()
        p.wait_position(fen)
        width = p.d.execute_script("return document.documentElement.scrollWidth")
        check(width <= 390, f"the page is {width}px wide on a 390px screen (horizontal scrolling)")
        b, m = p.rect('[data-testid="board"]'), p.rect(".moves-panel")
        check(b["width"] >= 360, f"the board is only {b['width']}px wide on a phone")
        check(m["top"] >= b["bottom"], "the move list is not below the board on a phone")
        p.q(f"pt-{fr}").click()
        p.wait(lambda: len(p.qa("#board .target")) == n_targets, "destinations on the phone")
        p.shot("phone-1-selected.png")
        p.q(f"pt-{to}").click()
        p.wait_position(best_fen)
        p.shot("phone-2-after-move.png")
        p.shot("phone-3-full.png", full=True)
        p.q("nav-end").click()
        p.wait_position(final)
        p.shot("phone-4-end.png")
        print("PASS: all checks of the web page passed")
        return 0
    except Fail as e:
        print(f"FAIL: {e}")
        try:
            p.shot("failure.png")
            logs = p.d.get_log("browser")
            for entry in logs[-10:]:
                print("  console:", entry.get("message"))
        except Exception:
            pass
        return 1
    finally:
        p.close()


def check_solve(p, api, table_fen):
    """Solve: a mate beyond the tables, shown with its line, which the navigation steps through;
    then a position of the tables, answered from them."""
    print(f"- solve {SOLVE_FEN}: a forced mate beyond the tables")
    st, sr = api.get("search", SOLVE_FEN)
    check(st == 200 and sr["result"] == "win" and sr["line"], f"the API's search of {SOLVE_FEN}: {st} {sr}")
    p.enter_fen(SOLVE_FEN)
    p.wait_position(SOLVE_FEN, states=("ready", "error"))
    hint = p.q("solve-result").text
    check(p.q("solve-result").get_attribute("data-result") is None, f"a result is shown before solving: {hint!r}")
    # Busy from the click on: the button is disabled, so a second click cannot start another search.
    busy = p.d.execute_script(
        "const b = document.querySelector('[data-testid=solve]'); b.click();"
        "return [b.disabled, b.textContent, document.getElementById('app').dataset.search || null];")
    check(busy[0] and "Solving" in busy[1] and busy[2] == "loading", f"the button is not busy while solving: {busy}")
    p.wait(lambda: p.q("solve-result").get_attribute("data-result") is not None, "the search's answer", 30)
    res = p.q("solve-result")
    d = sr["dtm_plies"]
    check(res.get_attribute("data-result") == "win", f"solve shows {res.get_attribute('data-result')!r}")
    check(res.get_attribute("data-source") == "search", f"solve's source {res.get_attribute('data-source')!r}")
    text = res.text
    want = f"Red wins in {plies(d)} ({math.ceil(d / 2)} moves)"
    check(text.startswith(want), f"solve's answer is {text!r}, expected it to start {want!r}")
    check(sr["line"][0]["chinese"] in text, f"solve's answer {text!r} lacks the best move {sr['line'][0]['chinese']}")
    stats = p.q("solve-stats").text
    check(stats.startswith("From the search") and "positions" in stats and " s" in stats, f"solve's stats: {stats!r}")
    check(p.q("solve").get_attribute("disabled") is None and p.q("solve").text == "Solve",
          "the Solve button stays busy after the answer")
    check(p.d.find_element(By.ID, "app").get_attribute("data-search") is None, "#app[data-search] stays")
    line = p.qa('[data-testid="line-move"]')
    check(len(line) == 1 + len(sr["line"]), f"the line shows {len(line) - 1} moves, the search {len(sr['line'])}")
    label = {"mate": "checkmate", "stalemate": "stalemate"}[sr["end"]]
    check(p.qa('[data-testid="line-end"]') and label in p.q("line-end").text,
          f"the end of the search's line is not labelled {label}")
    print(f"  {text!r}; {stats!r}")
    p.shot("desktop-7-solved.png")

    print("- step through the search's line")
    at = SOLVE_FEN
    for i, m in enumerate(sr["line"]):
        p.q("nav-forward").click()
        at = apply(at, m["iccs"])
        p.wait_position(at, states=("ready", "error"))
        left = d - i - 1
        if left > 0:
            who, verb = ("Black", "loses") if i % 2 == 0 else ("Red", "wins")
            exp = f"{who} {verb} in {plies(left)}"
            check(p.value().startswith(exp), f"after {m['iccs']} the value is {p.value()!r}, expected {exp!r}")
        check(p.q("solve-result").get_attribute("data-result") == "win", "the answer is gone while stepping")
    check(p.q("nav-forward").get_attribute("disabled") is not None, "forward is enabled at the mate")
    check(p.value().startswith("Black") and ("checkmated" in p.value() or "no legal move" in p.value()),
          f"at the mate the value is {p.value()!r}")
    print(f"  after {len(sr['line'])} plies: {p.value()!r}")
    p.shot("desktop-8-solved-end.png")

    print("- solve a position of the tables")
    st, probe = api.get("probe", table_fen)
    p.enter_fen(table_fen)
    p.wait_position(table_fen)
    check(p.q("solve-result").get_attribute("data-result") is None, "the last answer stays on a new position")
    p.q("solve").click()
    p.wait(lambda: p.q("solve-result").get_attribute("data-result") is not None, "the search's answer", 30)
    res = p.q("solve-result")
    check((res.get_attribute("data-result"), res.get_attribute("data-source")) == (cat(probe), "tables"),
          f"solve of a table's position: {res.get_attribute('data-result')} from {res.get_attribute('data-source')}")
    check(res.text.startswith(expected_value(probe)), f"solve says {res.text!r}, the probe {expected_value(probe)!r}")
    check(p.q("solve-stats").text.startswith("From the tables"), f"solve's stats: {p.q('solve-stats').text!r}")
    print(f"  {res.text!r}")


# Thresholds of check_glyphs: a glyph covers at least MIN_INK of its crop, and two different
# characters differ in at least MIN_UNLIKE of their ink. Each lies between what the page's glyphs
# give in headless Chromium (more ink, clearly different shapes) and what the missing-glyph boxes
# of system-font text without a CJK font give (little or no ink, all alike), with room on both
# sides.
MIN_INK = 0.06
MIN_UNLIKE = 0.3


def check_glyphs(p):
    """The pieces' characters, the river's and the Chinese notation's are drawn as glyphs: every
    crop has ink, and crops of different characters differ. Colour does not count: ink is any
    pixel darker than the piece face / board / panel (red and black ink alike)."""
    zh_fonts = fonts_zh()
    print(f"- glyphs: pieces, river and notation are drawn (CJK fonts on this machine: "
          f"{'unknown' if zh_fonts is None else zh_fonts})")
    missing = p.d.execute_script(
        "const g = window.XQGlyphs && XQGlyphs.outlines || {};"
        "return Object.values(XQ.CHARS).concat([...'楚河漢界']).filter((c) => !g[c]);")
    check(not missing, f"glyphs.js has no outline of {''.join(missing)!r}")
    check(not p.qa("#board .glyph-text"), "the board draws characters as text in the system's fonts")
    p.wait(lambda: p.d.execute_script(
        "return [...document.fonts].some((f) => f.family.replace(/\"/g, '') === 'xqtb glyphs'"
        " && f.status === 'loaded')"), "the page's font \"xqtb glyphs\" to be loaded", 5)
    b = p.rect('[data-testid="board"]')
    unit = b["width"] / 628  # px per SVG unit (viewBox 628 x 692)
    p.crop((b["left"], b["top"], b["width"], b["bottom"] - b["top"]), "glyphs-board.png")

    def compare(what, crops):
        """crops: [(label, char, ink set, area)]"""
        for label, ch, a, area in crops:
            check(len(a) >= MIN_INK * area,
                  f"{what} {label} ({ch}): no glyph drawn ({len(a)} of {area:.0f} px are ink)")
        worst = None
        for i, (l1, c1, a1, _) in enumerate(crops):
            for l2, c2, a2, _ in crops[i + 1:]:
                if c1 == c2:
                    continue
                u = unlike(a1, a2)
                worst = u if worst is None else min(worst, u)
                check(u >= MIN_UNLIKE, f"{what} {l1} ({c1}) and {l2} ({c2}) look alike "
                      f"(their ink differs by {u:.2f} < {MIN_UNLIKE}): not their glyphs")
        check(worst is not None, f"{what}: fewer than two different characters to compare")
        print(f"  {what}: {len(crops)} crops, ink {min(len(c[2]) / c[3] for c in crops):.2f}+, "
              f"different characters differ by {worst:.2f}+")

    # Pieces: the face inside the ring (ring radius 23.5 - 0.9 of stroke), whatever the colour.
    crops = []
    for g in p.qa('#board .piece'):
        sq, letter = g.get_attribute("data-square"), g.get_attribute("data-piece")
        c = p.d.execute_script("const r = arguments[0].querySelector('.body').getBoundingClientRect();"
                               "return [r.left + r.width / 2, r.top + r.height / 2];", g)
        half = round(21 * unit)
        x, y = round(c[0]) - half, round(c[1]) - half
        png = p.crop((x, y, 2 * half, 2 * half), f"glyph-piece-{sq}-{letter}.png")
        a = ink(png_gray(png), 150, disk=True)
        ch = p.d.execute_script("return XQ.CHARS[arguments[0]]", letter)
        crops.append((f"{letter} on {sq}", ch, a, math.pi * half * half))
    check({ch for _, ch, _, _ in crops if ch in "帥仕相傌俥炮兵"} and
          {ch for _, ch, _, _ in crops if ch in "將士象馬車砲卒"}, "the test needs red and black pieces")
    compare("pieces", crops)

    # River: each character's em box, between the grid lines of the river's banks.
    crops = []
    for e in p.qa("#board .river-char"):
        ch = e.get_attribute("data-char") or e.text
        c = p.d.execute_script("const r = arguments[0].getBoundingClientRect();"
                               "return [r.left + r.width / 2, r.top + r.height / 2];", e)
        half = round(20 * unit)
        png = p.crop((round(c[0]) - half, round(c[1]) - half, 2 * half, 2 * half),
                     f"glyph-river-{len(crops)}.png")
        crops.append((f"river character {len(crops) + 1}", ch, ink(png_gray(png), 170), 4 * half * half))
    check(len(crops) == 4, f"the river has {len(crops)} characters, not 4")
    compare("river", crops)

    # Text: each character of the best move's Chinese notation (font "xqtb glyphs").
    zh = p.qa('[data-testid="move"] .zh')
    check(zh, "no move with Chinese notation")
    boxes = p.d.execute_script(
        "const t = arguments[0].firstChild; const out = [];"
        "for (let i = 0; i < t.length; i++) { const r = document.createRange();"
        "  r.setStart(t, i); r.setEnd(t, i + 1); const b = r.getBoundingClientRect();"
        "  out.push([t.data[i], b.left, b.top, b.width, b.height]); }"
        "return out;", zh[0])
    crops = []
    for i, (ch, x, y, w, h) in enumerate(boxes):
        size = int(min(w, h))
        png = p.crop((round(x), round(y + (h - size) / 2), size, size), f"glyph-text-{i}.png")
        crops.append((f"notation character {i + 1}", ch, ink(png_gray(png), 140), size * size))
    compare(f"notation {zh[0].text!r}", crops)


def apply(fen, iccs):
    """The position after a move (same rule as the page: move, capture, toggle the side)."""
    board_s, side = key(fen).split()
    board = {}
    for i, row in enumerate(board_s.split("/")):
        f = 0
        for ch in row:
            if ch.isdigit():
                f += int(ch)
            else:
                board[(f, 9 - i)] = ch
                f += 1
    a, b = (ord(iccs[0]) - 97, int(iccs[1])), (ord(iccs[2]) - 97, int(iccs[3]))
    board[b] = board.pop(a)
    rows = []
    for r in range(9, -1, -1):
        row, e = "", 0
        for f in range(9):
            if (f, r) in board:
                row += (str(e) if e else "") + board[(f, r)]
                e = 0
            else:
                e += 1
        rows.append(row + (str(e) if e else ""))
    return "/".join(rows) + " " + ("b" if side == "w" else "w")


def main():
    ap = argparse.ArgumentParser(description="End-to-end test of the xqtb web page")
    ap.add_argument("base_url")
    ap.add_argument("screenshots")
    ap.add_argument("--fen", default=DEFAULT_FEN, help="a won position the server has")
    ap.add_argument("--missing-fen", default=MISSING_FEN, help="a position the server refuses")
    a = ap.parse_args()
    os.makedirs(a.screenshots, exist_ok=True)
    for exe in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not os.path.exists(exe):
            print(f"FAIL: {exe} is missing (apt-get install -y chromium chromium-driver)")
            return 1
    try:
        return run(a.base_url if a.base_url.endswith("/") else a.base_url + "/", a.screenshots,
                   a.fen, a.missing_fen)
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    except Exception as e:  # a crash is a failure too, with its reason
        print(f"FAIL: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
