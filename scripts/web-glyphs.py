#!/usr/bin/env python3
"""Write web/glyphs.js: the web page's own CJK glyphs, so that it needs no CJK font on the machine.

    pip install fonttools
    apt-get download fonts-lxgw-wenkai && dpkg-deb -x fonts-lxgw-wenkai_*.deb /tmp/wenkai
    python3 scripts/web-glyphs.py /tmp/wenkai/usr/share/fonts/truetype/lxgw-wenkai/LXGWWenKai-Bold.ttf

(download and unpack the package only, do not install it: the browser test wants a machine without
CJK fonts). The output is committed, so neither building nor serving the page needs the font.

web/glyphs.js defines window.XQGlyphs with
  * outlines: the SVG path of each character the board draws (the pieces of web/xiangqi.js's CHARS
    and the river's 楚河漢界), in a 1000-unit em with y pointing down, centred on (0, 0) (the centre
    of the character's em box); board.js scales and places them;
  * woff: a subset of the font (WOFF, base64) with those characters and the ones of the page's text:
    the Chinese move notation (xiangqi/src/notation.rs), the logo and the notation menu. glyphs.js
    registers it as the font family "xqtb glyphs", which style.css puts first for CJK text.
The source font's copyright notices and licence go into the file's header and the subset's name
table. Under the SIL Open Font License a subset is a Modified Version, which may not carry a Reserved
Font Name: the subset is renamed "xqtb glyphs" (see web/README.md). The output is deterministic.
"""
import argparse
import base64
import io
import os
import re
import sys

try:
    from fontTools import subset
    from fontTools.pens.basePen import BasePen
    from fontTools.pens.transformPen import TransformPen
    from fontTools.ttLib import TTFont
except ImportError:
    sys.exit("fontTools is missing: pip install fonttools")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIVER = "楚河漢界"  # board.js: 楚河 on the left of the river, 漢界 on the right
# The characters of the Chinese notation the server writes (xiangqi/src/notation.rs): piece names,
# Red's numerals, Black's full-width digits, direction, and the front / middle / rear of a file.
NOTATION = "帅仕相马车炮兵将士象卒" "一二三四五六七八九" "１２３４５６７８９" "进退平" "前中后"
OTHER = "帥中文"  # index.html: the logo, the notation menu's "中文"
FAMILY = "xqtb glyphs"
EM = 1000


def piece_chars():
    """The characters of the pieces, from CHARS in web/xiangqi.js."""
    with open(os.path.join(ROOT, "web", "xiangqi.js"), encoding="utf-8") as f:
        src = f.read()
    m = re.search(r"const CHARS = \{(.*?)\};", src, re.S)
    if not m:
        sys.exit("web/xiangqi.js has no `const CHARS = {...};`")
    chars = re.findall(r'[A-Za-z]: "(.)"', m.group(1))
    if len(chars) != 14:
        sys.exit(f"web/xiangqi.js's CHARS has {len(chars)} pieces, not 14")
    return "".join(chars)


def unique(s):
    return "".join(dict.fromkeys(s))


class RelativePathPen(BasePen):
    """SVG path data with integer coordinates, relative commands (m l h v q z), no spaces it can
    do without: compact, and exact (the absolute points are rounded first)."""

    def __init__(self, glyphset):
        super().__init__(glyphset)
        self.out = []
        self.cur = (0, 0)
        self.start = (0, 0)

    @staticmethod
    def num(n, first):
        s = str(n)
        return s if first or s.startswith("-") else " " + s

    def cmd(self, c, *pts):
        # Every point of a segment is relative to the point where the segment starts.
        parts = [c]
        for i, (x, y) in enumerate(pts):
            parts.append(self.num(x - self.cur[0], i == 0) + self.num(y - self.cur[1], False))
        self.out.append("".join(parts))
        self.cur = pts[-1]

    def _moveTo(self, pt):
        p = (round(pt[0]), round(pt[1]))
        self.cmd("m", p)
        self.cur = self.start = p

    def _lineTo(self, pt):
        x, y = round(pt[0]), round(pt[1])
        if (x, y) == self.cur:
            return
        if y == self.cur[1]:
            self.out.append("h" + str(x - self.cur[0]))
        elif x == self.cur[0]:
            self.out.append("v" + str(y - self.cur[1]))
        else:
            self.cmd("l", (x, y))
            return
        self.cur = (x, y)

    def _qCurveToOne(self, pt1, pt2):
        self.cmd("q", (round(pt1[0]), round(pt1[1])), (round(pt2[0]), round(pt2[1])))

    def _curveToOne(self, pt1, pt2, pt3):  # CFF fonts: cubic curves
        c = [(round(p[0]), round(p[1])) for p in (pt1, pt2, pt3)]
        self.cmd("c", *c)

    def _closePath(self):
        self.out.append("z")
        self.cur = self.start

    def d(self):
        return "".join(self.out)


def outline(font, ch):
    """The SVG path of `ch`: EM units, y down, origin at the centre of its em box."""
    cmap = font.getBestCmap()
    if ord(ch) not in cmap:
        sys.exit(f"the font has no glyph for {ch} (U+{ord(ch):04X})")
    name = cmap[ord(ch)]
    gs = font.getGlyphSet()
    upm = font["head"].unitsPerEm
    adv = font["hmtx"][name][0]
    os2 = font["OS/2"]
    # The ideographic em box: from the typographic descender, one em high (-120..880 in most CJK
    # fonts); its centre is where the board puts the centre of a character.
    bottom = os2.sTypoDescender
    s = EM / upm
    cy = (bottom + upm / 2) * s
    pen = RelativePathPen(gs)
    gs[name].draw(TransformPen(pen, (s, 0, 0, -s, -adv * s / 2, cy)))
    return pen.d()


def names(font):
    def get(i):
        n = font["name"].getName(i, 3, 1, 0x409) or font["name"].getName(i, 1, 0, 0)
        return n.toUnicode() if n else ""
    return {i: get(i) for i in (0, 1, 2, 5, 13, 14)}


def woff_subset(path, chars):
    font = TTFont(path, recalcTimestamp=False)
    opts = subset.Options()
    opts.flavor = "woff"
    opts.layout_features = []
    opts.hinting = False
    opts.notdef_outline = True
    opts.name_IDs = [0, 13, 14]  # copyright, licence, licence URL
    opts.name_languages = [0x409]
    opts.drop_tables += ["BASE", "GDEF", "GSUB", "GPOS", "vhea", "vmtx", "gasp"]
    sub = subset.Subsetter(opts)
    sub.populate(text=chars)
    sub.subset(font)
    # A Modified Version does not carry the Reserved Font Names: a new name of its own.
    name = font["name"]
    for i, v in [(1, FAMILY), (2, "Bold"), (3, f"{FAMILY} Bold"), (4, f"{FAMILY} Bold"),
                 (6, FAMILY.replace(" ", "-") + "-Bold")]:
        name.setName(v, i, 3, 1, 0x409)
    name.names = [n for n in name.names if n.platformID == 3]
    font["OS/2"].usWeightClass = 700
    buf = io.BytesIO()
    subset.save_font(font, buf, opts)
    return buf.getvalue()


def js_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("font", help="the source font (LXGWWenKai-Bold.ttf of fonts-lxgw-wenkai)")
    ap.add_argument("--out", default=os.path.join(ROOT, "web", "glyphs.js"))
    a = ap.parse_args()

    font = TTFont(a.font, recalcTimestamp=False)
    n = names(font)
    board = unique(piece_chars() + RIVER)
    text = unique(board + NOTATION + OTHER)
    woff = woff_subset(a.font, text)

    def oneline(s):
        return " ".join(s.split())

    copyright_lines = [oneline(c) for c in n[0].splitlines() if c.strip()]
    # The page must refer to nothing external (tests/http.rs): addresses without their scheme.
    noscheme = re.compile(r"https?://")
    head = [
        "// GENERATED by scripts/web-glyphs.py: do not edit. The web page's own CJK glyphs, so that",
        "// it looks the same with and without CJK fonts on the machine (see web/README.md).",
        "//",
        f"// Glyphs from the font {n[1]} {n[2]}, {oneline(n[5])}",
        f"// (file {os.path.basename(a.font)}).",
    ]
    head += [f"// {noscheme.sub('', c)}" for c in copyright_lines]
    licence_url = noscheme.sub("", n[14]) or "scripts.sil.org/OFL"
    head += [
        f"// Licence: SIL Open Font License, Version 1.1 ({licence_url}),",
        "// with Reserved Font Names \"霞鹜\" and \"LXGW\"; the full text is web/OFL.txt. The outlines",
        f"// and the subset font below are a Modified Version of it, named \"{FAMILY}\".",
        "//",
        "// outlines: SVG path data of each character the board draws, in a 1000-unit em, y down,",
        "// centred on (0, 0). woff: a subset font (WOFF, base64) of those and of the characters of",
        f"// the page's text (the Chinese move notation), registered as the font family \"{FAMILY}\".",
        "",
    ]
    out = ["\n".join(head), '"use strict";', "window.XQGlyphs = {", f"  em: {EM},",
           f"  family: {js_str(FAMILY)},", "  outlines: {"]
    for ch in board:
        out.append(f"    {js_str(ch)}: {js_str(outline(font, ch))},")
    out.append("  },")
    out.append(f"  chars: {js_str(text)},")
    b64 = base64.b64encode(woff).decode()
    out.append("  woff:")
    width = 96
    chunks = [b64[i:i + width] for i in range(0, len(b64), width)]
    out.append("\n".join(f"    {js_str(c)} +" for c in chunks[:-1]))
    out.append(f"    {js_str(chunks[-1])},")
    out.append("};")
    out.append("""
// The subset font for the page's text (style.css names it first for CJK text).
(function () {
  if (typeof FontFace !== "function" || !document.fonts) return;
  try {
    const bin = atob(window.XQGlyphs.woff);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const face = new FontFace(window.XQGlyphs.family, bytes.buffer, { weight: "100 900" });
    document.fonts.add(face);
  } catch (e) {
    // Without it the text falls back to the system's fonts; the board does not need it.
  }
})();
""")
    js = "\n".join(out)
    with open(a.out, "w", encoding="utf-8", newline="\n") as f:
        f.write(js)
    print(f"{a.out}: {len(js.encode())} bytes; {len(board)} outlines ({board}), "
          f"subset font of {len(text)} characters: {len(woff)} bytes WOFF")


if __name__ == "__main__":
    main()
