"""The reports in a real browser: headless Chromium (Debian's, via Playwright's executable_path) opens reports/index.html
from a sweep run into a temporary folder, follows a link to a run and to the sweep summary, and checks that tables and
figures render (every image decodes, with a non-zero size and alt text) with the network blocked. Screenshots are saved
beside the reports."""
from pathlib import Path

import pytest

from mmresearch.sweep import run_sweep

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SMOKE = Path(__file__).resolve().parents[1]/"nbs"/"experiments"/"smoke.ipynb"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium (`make chromium`)")

IMAGES_JS = "Array.from(document.images).map(i => ({ok: i.complete && i.naturalWidth > 0 && i.naturalHeight > 0, alt: i.alt}))"


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
        assert row.locator("td").last.inner_text().startswith("50.000 [")     # always-yes on balanced questions: exactly 50%
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
