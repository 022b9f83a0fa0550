#!/usr/bin/env bash
# Renders tests/data/report-sample.json with scripts/render_report.py (as `ptsim report` does:
# Debian's /usr/bin/python3 and python3-matplotlib) and opens report.html in headless Chromium:
#   - the renderer writes the four plots, report.md and report.html, byte-identical on a rerun;
#   - report.md states each GPU's validated error band as report.json gives it;
#   - a bad report.json exits 2 and names the missing key;
#   - report.html has no scripts and nothing to load from outside the page;
#   - Chromium loads it without console messages, its DOM holds the points table and four <img>
#     (plot-scaling, plot-breakdown, plot-memory, plot-timeline) with alt text and data: URIs that
#     decode as PNG, and Chromium decodes each image to its PNG's size;
#   - the screenshot shows the plots; it is kept as BUILD_DIR/test-artifacts/report-screenshot.png.
# Fails (never skips) when Chromium or matplotlib is missing: scripts/setup.sh installs both.
#
#   tests/report/render_report_test.sh [BUILD_DIR]    (default: build/ in the source tree)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "${1:-$root/build}"
build_dir="$(cd "${1:-$root/build}" && pwd)"
python=/usr/bin/python3
renderer="$root/scripts/render_report.py"
sample="$root/tests/data/report-sample.json"
artifacts="$build_dir/test-artifacts"
screenshot="$artifacts/report-screenshot.png"

fail() {
  echo "render_report_test: FAIL: $*" >&2
  exit 1
}
step() { echo "render_report_test: $*"; }

# --- prerequisites: missing ones fail, with what to install --------------------------------------
[ -x "$python" ] || fail "$python not found (apt-get install python3; scripts/setup.sh installs it)"
"$python" -c 'import matplotlib, PIL' 2>/dev/null ||
  fail "matplotlib is not importable by $python (apt-get install python3-matplotlib; scripts/setup.sh installs it)"
chromium="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$chromium" ] || fail "chromium not found on PATH (apt-get install chromium; scripts/setup.sh installs it)"
[ -f "$sample" ] || fail "$sample is missing"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$artifacts"
rm -f "$screenshot"

run_chromium() {
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --no-default-browser-check --disable-extensions --user-data-dir="$tmp/chromium-profile" "$@"
}

# Chromium's console messages, as --enable-logging=stderr writes them: "...:CONSOLE:..." or
# "...:CONSOLE(line)]...". report.html has no scripts, so any console message (a blocked or failed
# load, a CSP violation) is an error.
console_lines() { grep -E ':CONSOLE[:(]' "$1" || true; }

# --- render ---------------------------------------------------------------------------------------
step "rendering $sample"
cp "$sample" "$tmp/report.json"
rc=0
"$python" "$renderer" "$tmp/report.json" "$tmp/out" > "$tmp/render.log" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/render.log" >&2; fail "render_report.py exited $rc on the sample report"; }
files=(scaling.png breakdown.png memory.png timeline.png report.md report.html)
for f in "${files[@]}"; do
  [ -s "$tmp/out/$f" ] || fail "render_report.py did not write $f"
done
for f in scaling.png breakdown.png memory.png timeline.png; do
  [ "$(head -c 8 "$tmp/out/$f" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$f is not a PNG"
done

step "rendering again: the same bytes"
"$python" "$renderer" "$tmp/report.json" "$tmp/out2" > "$tmp/render2.log" 2>&1 ||
  { cat "$tmp/render2.log" >&2; fail "render_report.py failed on the second run"; }
for f in "${files[@]}"; do
  cmp -s "$tmp/out/$f" "$tmp/out2/$f" || fail "$f differs between two renders of the same report.json"
done

step "report.md: the points table and the plots"
"$python" - "$tmp/out/report.md" "$sample" <<'EOF' || fail "report.md check failed"
import json, sys
md = open(sys.argv[1], encoding="utf-8").read()
report = json.load(open(sys.argv[2]))
rows = [l for l in md.splitlines() if l.startswith("| ") and not l.startswith("| GPUs")]
assert len(rows) == len(report["points"]), f"{len(rows)} table rows for {len(report['points'])} points"
nofit = sum(1 for p in report["points"] if not p["fits"])
assert sum("does not fit" in r for r in rows) == nofit, "points that do not fit are not marked 'does not fit'"
for f in ("scaling.png", "breakdown.png", "memory.png", "timeline.png"):
    assert f"]({f})" in md, f"report.md does not show {f}"
# Every GPU's validated error band, as the sample gives it, or that none validates it.
assert "## Validated error" in md, "report.md has no validated-error section"
for g in report["validated_error"]["gpus"]:
    line = next((l for l in md.splitlines() if l.startswith(f"- **{g['gpu']}**")), None)
    assert line is not None, f"report.md states no error band for {g['gpu']}"
    if g["runs"] == 0:
        assert "no published run on this GPU validates ptsim" in line, line
    else:
        want = (f"within a median {g['median_abs_error_pct']:.1f}% of {g['runs']} published runs on this GPU, "
                f"from {g['min_error_pct']:+.1f}% to {g['max_error_pct']:+.1f}%")
        assert want in line, f"{line!r} lacks {want!r}"
EOF

# --- bad input ------------------------------------------------------------------------------------
step "a report.json without a key exits 2 and names the key"
"$python" - "$sample" "$tmp/bad.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
next(p for p in report["points"] if p["fits"]).pop("step_time_s")
json.dump(report, open(sys.argv[2], "w"))
EOF
rc=0
"$python" "$renderer" "$tmp/bad.json" "$tmp/bad-out" 2> "$tmp/bad.err" || rc=$?
[ "$rc" -eq 2 ] || fail "render_report.py exited $rc on a report without step_time_s (expected 2)"
grep -q "missing key 'step_time_s'" "$tmp/bad.err" ||
  fail "render_report.py's message does not name the missing key: $(cat "$tmp/bad.err")"
sed 's/ptsim-capacity-report\/1/ptsim-capacity-report\/999/' "$sample" > "$tmp/bad-schema.json"
rc=0
"$python" "$renderer" "$tmp/bad-schema.json" "$tmp/bad-out" 2> "$tmp/bad.err" || rc=$?
[ "$rc" -eq 2 ] || fail "render_report.py exited $rc on an unknown schema (expected 2)"

# --- report.html is self-contained ----------------------------------------------------------------
step "report.html: no scripts, no external resources"
"$python" - "$tmp/out/report.html" <<'EOF' || fail "report.html is not self-contained"
import sys
from html.parser import HTMLParser
class Check(HTMLParser):
    def handle_starttag(self, tag, attrs):
        assert tag not in ("script", "iframe", "object", "embed", "link"), f"report.html has a <{tag}>"
        for name, value in attrs:
            assert not name.startswith("on"), f"<{tag}> has an event handler {name}"
            if name in ("src", "href", "srcset", "poster", "data"):
                assert (value or "").startswith("data:"), f"<{tag} {name}={value[:60]!r}> loads from outside"
Check().feed(open(sys.argv[1], encoding="utf-8").read())
EOF

# --- Chromium -------------------------------------------------------------------------------------
# The console check means something only if Chromium reports console messages here: a page that
# logs an error must show up.
step "checking that Chromium's console messages can be observed ($chromium)"
printf '%s\n' '<!DOCTYPE html><html><body><script>console.error("ptsim canary");</script></body></html>' \
  > "$tmp/canary.html"
run_chromium --enable-logging=stderr --v=0 --dump-dom "file://$tmp/canary.html" > /dev/null 2> "$tmp/canary.err" ||
  { tail -20 "$tmp/canary.err" >&2; fail "chromium could not load a test page"; }
console_lines "$tmp/canary.err" | grep -q "ptsim canary" ||
  { tail -20 "$tmp/canary.err" >&2; fail "chromium's stderr shows no console messages, so they cannot be checked"; }

step "screenshot of report.html (1400x3000)"
run_chromium --enable-logging=stderr --v=0 --window-size=1400,3000 --screenshot="$screenshot" \
  "file://$tmp/out/report.html" > "$tmp/shot.out" 2> "$tmp/shot.err" ||
  { tail -20 "$tmp/shot.err" >&2; fail "chromium failed to take a screenshot of report.html"; }
[ -s "$screenshot" ] || fail "chromium wrote no screenshot"
if [ -n "$(console_lines "$tmp/shot.err")" ]; then
  console_lines "$tmp/shot.err" >&2
  fail "report.html logged console messages (above)"
fi

step "DOM of report.html as Chromium loaded it"
run_chromium --enable-logging=stderr --v=0 --dump-dom "file://$tmp/out/report.html" \
  > "$tmp/dom.html" 2> "$tmp/dom.err" ||
  { tail -20 "$tmp/dom.err" >&2; fail "chromium failed to load report.html"; }
if [ -n "$(console_lines "$tmp/dom.err")" ]; then
  console_lines "$tmp/dom.err" >&2
  fail "report.html logged console messages (above)"
fi
"$python" - "$tmp/dom.html" "$sample" "$tmp/png-sizes.txt" <<'EOF' || fail "report.html's DOM check failed"
import base64, io, json, struct, sys
from html.parser import HTMLParser
from PIL import Image
dom = open(sys.argv[1], encoding="utf-8").read()
report = json.load(open(sys.argv[2]))
class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.rows, self.in_tbody, self.title, self.in_title, self.text = {}, 0, False, "", False, []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs[a.get("id")] = a
        elif tag == "tbody":
            self.in_tbody = True
        elif tag == "tr" and self.in_tbody:
            self.rows += 1
        elif tag == "title":
            self.in_title = True
    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_tbody = False
        elif tag == "title":
            self.in_title = False
    def handle_data(self, data):
        self.text.append(data)
        if self.in_title:
            self.title += data
d = Dom()
d.feed(dom)
assert report["model"] in d.title, f"page title {d.title!r} does not name the model"
assert d.rows == len(report["points"]), f"{d.rows} table rows for {len(report['points'])} points"
text = "".join(d.text)
assert "does not fit" in text, "no 'does not fit' in the page"
ids = ["plot-scaling", "plot-breakdown", "plot-memory", "plot-timeline"]
missing = [i for i in ids if i not in d.imgs]
assert not missing, f"no <img id=...> for {missing} (found {sorted(k for k in d.imgs if k)})"
prefix = "data:image/png;base64,"
sizes = []
for i in ids:
    img = d.imgs[i]
    assert img.get("alt", "").strip(), f"<img id={i}> has no alt text"
    src = img.get("src", "")
    assert src.startswith(prefix), f"<img id={i}> src is not a PNG data: URI: {src[:40]!r}"
    png = base64.b64decode(src[len(prefix):], validate=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", f"<img id={i}> does not decode as PNG"
    w, h = struct.unpack(">II", png[16:24])
    assert w > 0 and h > 0, f"<img id={i}> is {w}x{h}"
    try:  # the whole image decodes: every chunk and all pixel data are there
        with Image.open(io.BytesIO(png)) as im:
            im.load()
            assert im.size == (w, h)
    except Exception as e:
        raise AssertionError(f"<img id={i}>'s PNG does not decode: {e}")
    sizes.append(f"{i} true {w}x{h}")
    print(f"  {i}: PNG {w}x{h}, {len(png)} bytes")
open(sys.argv[3], "w").write("\n".join(sizes) + "\n")
EOF

# Whether Chromium decoded the images needs a script; report.html has none (and its CSP forbids
# them), so a copy without the CSP gets one that lists each image's natural size.
step "natural size of each image as Chromium decoded it"
"$python" - "$tmp/out/report.html" "$tmp/probe.html" <<'EOF'
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
probe = """<script>
window.addEventListener("load", function () {
  var lines = [];
  document.querySelectorAll("img").forEach(function (img) {
    lines.push(img.id + " " + img.complete + " " + img.naturalWidth + "x" + img.naturalHeight);
  });
  var pre = document.createElement("pre");
  pre.id = "ptsim-probe";
  pre.textContent = lines.join("\\n");
  document.body.appendChild(pre);
});
</script>
"""
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", probe + "</body>"))
EOF
run_chromium --virtual-time-budget=10000 --dump-dom "file://$tmp/probe.html" > "$tmp/probe-dom.html" 2> "$tmp/probe.err" ||
  { tail -20 "$tmp/probe.err" >&2; fail "chromium failed to load the probe page"; }
"$python" - "$tmp/probe-dom.html" "$tmp/png-sizes.txt" <<'EOF' || fail "Chromium did not decode the images"
import html, re, sys
m = re.search(r'<pre id="ptsim-probe">(.*?)</pre>', open(sys.argv[1], encoding="utf-8").read(), re.S)
assert m, "the probe found no images (page did not finish loading?)"
got = html.unescape(m.group(1)).split("\n")
want = open(sys.argv[2]).read().split("\n")[:-1]
assert got == want, f"Chromium's images {got} != the PNGs {want}"
for line in got:
    print("  " + line)
EOF

step "the screenshot shows the plots"
"$python" - "$screenshot" <<'EOF' || fail "the screenshot $screenshot does not show the report"
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
assert img.size == (1400, 3000), f"screenshot is {img.size[0]}x{img.size[1]}, expected 1400x3000"
small = img.resize((350, 750))
px = list(small.getdata())
colored = sum(1 for r, g, b in px if max(r, g, b) - min(r, g, b) > 60) / len(px)
nonwhite = sum(1 for r, g, b in px if min(r, g, b) < 200) / len(px)
print(f"  {nonwhite:.1%} of the page is not white, {colored:.1%} is colored")
assert nonwhite > 0.05, "the page is almost blank"
assert colored > 0.01, "no colored plots on the page"
EOF

step "PASS (screenshot: $screenshot)"
