#!/usr/bin/env python3
"""Opens each kind of `--report FILE.html` in headless Chromium and checks what a reader sees.

    check_reports.py STAGECRAFT OUTDIR

For every report: the command writes it; Chromium (Debian's `chromium`) loads it from disk with
the network off and dumps the DOM after the report's script ran; the test checks the expected
sections, one timeline row per rank, the script's readiness mark and that no script error or
console message appeared, and that the file stays under its size bound. The bundled example's
report is also screenshotted (OUTDIR/simulate-bundled.png; doc/report.png is a copy of it).
Exit 0 when every check holds, 1 otherwise (each failure printed).
"""

import html.parser
import os
import shutil
import subprocess
import sys

MIB = 1024 * 1024


class Dom(html.parser.HTMLParser):
    """The facts the checks need from a dumped DOM."""

    def __init__(self):
        super().__init__()
        self.sections = []
        self.timeline_rows = []
        self.timelines = []
        self.body = {}
        self.svgs = 0
        self.table_rows = 0
        self.fetches = []  # what the page would load: any src, <link href>, CSS url(...)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if "src" in attributes or tag == "link":
            self.fetches.append(f"<{tag} {attributes.get('src') or attributes.get('href')}>")
        if "url(" in (attributes.get("style") or ""):
            self.fetches.append(f"<{tag} style={attributes['style']}>")
        if tag == "section":
            self.sections.append(attributes.get("id"))
        elif tag == "body":
            self.body = attributes
        elif tag == "svg":
            self.svgs += 1
        elif tag == "tr":
            self.table_rows += 1
        if "timeline-row" in classes:
            self.timeline_rows.append(int(attributes["data-rank"]))
        if "timeline" in classes:
            self.timelines.append(attributes)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


# Headless, as root in CI containers (no sandbox), with a small /dev/shm (no shared memory).
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--hide-scrollbars", "--no-first-run", "--disable-extensions",
                 "--disable-background-networking", "--enable-logging=stderr", "--v=0",
                 "--window-size=1400,2000"]


def open_in_browser(browser, path, extra):
    # A fresh profile per run, so runs do not share state (or a lock).
    profile = path + ".profile"
    shutil.rmtree(profile, ignore_errors=True)
    command = [browser, *BROWSER_FLAGS, "--user-data-dir=" + profile, *extra,
               "file://" + os.path.abspath(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    shutil.rmtree(profile, ignore_errors=True)
    return done


def check(stagecraft, browser, outdir, case):
    name, args, sections, ranks, max_bytes, screenshot = case
    path = os.path.join(outdir, name + ".html")
    failures = []
    ran = subprocess.run([stagecraft, *args, "--report", path], capture_output=True, text=True,
                         timeout=300)
    if ran.returncode not in (0, 1) or not os.path.exists(path):
        return [f"{name}: `stagecraft {' '.join(args)} --report` exited {ran.returncode}: "
                f"{ran.stderr.strip()}"]
    size = os.path.getsize(path)
    if size > max_bytes:
        failures.append(f"{name}: {size} bytes, above the bound of {max_bytes}")
    done = open_in_browser(browser, path, ["--dump-dom"])
    if done.returncode != 0:
        return failures + [f"{name}: chromium exited {done.returncode}: {done.stderr[-2000:]}"]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    failures += [f"{name}: console: {line}" for line in console]
    dom = Dom()
    dom.feed(done.stdout)
    if dom.body.get("data-ready") != "1":
        failures.append(f"{name}: the report's script did not finish (no data-ready on <body>)")
    if dom.fetches:
        failures.append(f"{name}: the report would fetch {dom.fetches[:3]} (it must be "
                        f"self-contained)")
    if "data-errors" in dom.body:
        failures.append(f"{name}: script errors: {dom.body['data-errors']}")
    missing = [section for section in sections if section not in dom.sections]
    if missing:
        failures.append(f"{name}: sections {missing} missing (found {dom.sections})")
    if ranks is not None:
        if dom.timeline_rows != list(range(ranks)):
            failures.append(f"{name}: timeline rows {len(dom.timeline_rows)}, expected one per "
                            f"rank ({ranks})")
        rendered = [t.get("data-render-ms") for t in dom.timelines]
        if not rendered or None in rendered:
            failures.append(f"{name}: the timeline was not drawn")
        else:
            print(f"{name}: timeline drawn in {', '.join(rendered)} ms "
                  f"({dom.timelines[0].get('data-mode')} mode), page ready "
                  f"{dom.body.get('data-open-ms')} ms after navigation")
    print(f"{name}: {size} bytes, sections {dom.sections}, {dom.svgs} svg, "
          f"{dom.table_rows} table rows")
    if screenshot and not failures:
        png = os.path.join(outdir, name + ".png")
        shot = open_in_browser(browser, path, ["--screenshot=" + png])
        if shot.returncode != 0 or not os.path.exists(png):
            failures.append(f"{name}: no screenshot: {shot.stderr[-2000:]}")
        else:
            print(f"{name}: screenshot {png}")
    return failures


RUN_SECTIONS = ["summary", "timeline", "memory", "bubble", "shared-state", "derivation",
                "assumptions"]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    stagecraft, outdir = sys.argv[1], sys.argv[2]
    browser = chromium()
    if browser is None:
        print("check_reports: no chromium on PATH; scripts/install-deps.sh installs Debian's "
              "chromium")
        return 1
    os.makedirs(outdir, exist_ok=True)
    cases = [
        # name, arguments, sections, timeline rows (None: no timeline), size bound, screenshot
        ("simulate-bundled", ["simulate"], RUN_SECTIONS, 8, 2 * MIB, True),
        ("simulate-gpt-145b", ["simulate", "tests/golden/data/table1/gpt-145.6b.yaml"],
         RUN_SECTIONS, 8, 2 * MIB, False),
        ("simulate-64x4096", ["simulate", "examples/uniform-study.yaml", "--pp", "64",
                              "--microbatches", "4096"], RUN_SECTIONS, 64, 10 * MIB, False),
        ("plan", ["plan", "--hf-config", "tests/golden/data/hf/llama-3-8b.json", "--cluster",
                  "h100", "--gpus", "8", "--global-batch-size", "64", "--seq-len", "8192",
                  "--engine", "megatron", "--top", "5"],
         ["plans", "pareto", "rejections", "assumptions"], None, 2 * MIB, False),
        ("serve", ["serve", "examples/llama3-70b-serve.yaml", "--rate", "2", "--requests", "200"],
         ["summary", "latency", "kv-cache", "assumptions"], None, 2 * MIB, False),
        ("goodput", ["goodput", "--gpus", "16384", "--checkpoint-blocking", "0.6s",
                     "--checkpoint-persist", "51s", "--restart", "189s"],
         ["summary", "goodput", "what-if", "assumptions"], None, 2 * MIB, False),
    ]
    failures = []
    for case in cases:
        failures += check(stagecraft, browser, outdir, case)
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
