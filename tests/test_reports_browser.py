"""The reports in a real browser: headless Chromium (Debian's, via Playwright's executable_path) opens reports/index.html
from a sweep run into a temporary folder, follows a link to a run and to the sweep summary, and checks that tables and
figures render (every image decodes, with a non-zero size and alt text) with the network blocked. Screenshots are saved
beside the reports.

Then a hostile sweep: a params file whose description and model name, and a model whose answers, hold `<script>` and
`<img onerror>`. The pages must show that text as text (checked in the HTML) and, opened in Chromium, run none of it:
once as written (the pages forbid scripts with a Content-Security-Policy) and once with that policy bypassed, so the
escaping alone is tested too."""
import re
from pathlib import Path

import pytest
import yaml

from mmresearch.fakeserver import FakeChatServer
from mmresearch.sweep import run_sweep

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SMOKE = Path(__file__).resolve().parents[1]/"nbs"/"experiments"/"smoke.ipynb"

needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium (`make chromium`)")

IMAGES_JS = "Array.from(document.images).map(i => ({ok: i.complete && i.naturalWidth > 0 && i.naturalHeight > 0, alt: i.alt}))"


@needs_chromium
def test_reports_render_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright
    params = tmp_path/"browser.yaml"
    params.write_text(f"notebook: {SMOKE}\nfixed: {{n_samples: 6}}\ngrid: {{model: ['scripted:yes']}}\nheadline: accuracy\n")
    res = run_sweep(params, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert [r.status for r in res.runs] == ["ok"], res.describe()
    yes_run = res.runs[0].run
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        blocked = []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (blocked.append(route.request.url), route.abort()))
        page.goto((tmp_path/"reports"/"index.html").as_uri())
        assert page.title() == "mmresearch reports"
        row = page.locator("tr", has_text=yes_run)
        assert row.locator("td").last.inner_text().startswith("50.0% [")       # always-yes on balanced questions: exactly 50%
        page.screenshot(path=str(tmp_path/"index.png"), full_page=True)

        page.click(f"a[href$='{yes_run}/run.html']")
        page.wait_for_load_state("load")
        assert page.url.endswith(f"{yes_run}/run.html")
        assert page.locator("table").count() >= 3                          # samples, metrics, manifest
        assert "accuracy" in page.locator("table").nth(1).inner_text()
        assert page.get_by_text("Run manifest").count() == 1
        images = page.evaluate(IMAGES_JS)
        assert len(images) >= 2 and all(i["ok"] for i in images), images  # the figure and the example gallery
        assert any(i["alt"].startswith("Bar chart of accuracy") for i in images), images
        assert "said yes 100% of the time" in page.inner_text("body")
        page.screenshot(path=str(tmp_path/"run.png"), full_page=True)

        page.click("text=sweep summary")
        page.wait_for_load_state("load")
        assert page.url.endswith("summary.html")
        images = page.evaluate(IMAGES_JS)
        assert len(images) == 1 and images[0]["ok"] and images[0]["alt"].startswith("Point-range chart of accuracy"), images
        assert page.locator("table").count() >= 3
        page.screenshot(path=str(tmp_path/"summary.png"), full_page=True)
        browser.close()
    assert blocked == []                                                     # nothing needed the network
    assert all((tmp_path/f).stat().st_size > 10_000 for f in ("index.png", "run.png", "summary.png"))


HOSTILE = {"description": """<script>window.__pwned = "description"</script><img src=x onerror="window.__pwned = 'description-img'">""",
           "model": """openai:<img src=x onerror="window.__pwned = 'model'"><script>window.__pwned = "model-script"</script>""",
           "answer": """<script>window.__pwned = "answer"</script><img src=x onerror="window.__pwned = 'answer-img'"> Yes"""}


@pytest.fixture(scope="module")
def hostile_reports(tmp_path_factory):
    "A sweep whose params text and model answers are script; returns the reports folder and the run's folder name."
    tmp = tmp_path_factory.mktemp("hostile")
    with FakeChatServer(answer=lambda body: HOSTILE["answer"]) as srv:
        params = tmp/"hostile.yaml"
        params.write_text(yaml.safe_dump({"name": "hostile", "description": HOSTILE["description"], "notebook": str(SMOKE),
                                          "headline": "accuracy", "fixed": {"n_samples": 4, "base_url": srv.base_url},
                                          "grid": {"model": [HOSTILE["model"]]}}))
        res = run_sweep(params, workers=1, reports_dir=tmp/"reports", cache_path=tmp/"c.sqlite", progress=False)
        assert [r.status for r in res.runs] == ["ok"], res.describe()
        assert srv.completed == 4
    return tmp/"reports", res.runs[0].run


def test_hostile_text_is_escaped_in_every_page(hostile_reports):
    reports, run = hostile_reports
    pages = {name: (reports/path).read_text() for name, path in
             [("index", "index.html"), ("summary", "hostile/summary.html"), ("run", f"hostile/{run}/run.html")]}
    for name, page in pages.items():
        assert not re.search(r"<script\b", page, re.I), name                      # no script element at all
        assert not re.search(r"<img\b[^>]*\bonerror", page, re.I), name           # no live event handler
        assert "content=\"script-src 'none'" in page, name                         # and scripts are forbidden anyway
    assert "&lt;script&gt;window.__pwned" in pages["summary"]                       # the description, shown as text
    assert "&lt;img src=x onerror=" in pages["run"]                                 # the model's name in the run's prose
    assert re.search(r"&lt;script&gt;window.__pwned = (&quot;|\")answer", pages["run"])  # the model's answer


@needs_chromium
@pytest.mark.parametrize("bypass_csp", [False, True])
def test_no_script_runs_in_chromium(hostile_reports, bypass_csp):
    from playwright.sync_api import sync_playwright
    reports, run = hostile_reports
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_context(bypass_csp=bypass_csp).new_page()
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
        for path in ("index.html", "hostile/summary.html", f"hostile/{run}/run.html"):
            page.goto((reports/path).as_uri())
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned") is None, (path, page.evaluate("window.__pwned"))
            body = page.inner_text("body")
            if path != "index.html": assert "window.__pwned" in body, path          # the text is there, as text
        browser.close()
    assert dialogs == []


@needs_chromium
def test_hostile_sweep_explorers_show_it_as_text(hostile_reports):
    "The same sweep's explorers (issue 43): the model's answer and name are on the page as text, no script of theirs runs."
    from playwright.sync_api import sync_playwright
    reports, run = hostile_reports
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        problems, dialogs = [], []
        page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
        for path in ("hostile/explorer.html", f"hostile/{run}/explorer.html"):
            page.goto((reports/path).as_uri())
            page.wait_for_selector("body[data-ready='1']")
            body = page.inner_text("body")
            assert HOSTILE["answer"] in body and "window.__pwned" in page.title() + body, path
            assert page.evaluate("window.__pwned") is None, (path, page.evaluate("window.__pwned"))
        browser.close()
    assert problems == [] and dialogs == []
