"""The explorer as a reader uses it (issue 43), in headless Debian Chromium over file:// with the network blocked.

1. A real sweep (Hal-Eval discriminative, two scripted models on the same items, run by `run_sweep`): from the index
   the reader opens a run's explorer, filters to the wrong answers on relation captions, shares the view by its URL,
   then follows a count of the paired table on the summary page to its items. The items shown are checked against the
   runs' samples.parquet, read here with pandas; the console must stay free of errors and CSP violations.
2. Every study's explorer, written from its experiment notebook's own output (tiny defaults), matches its per-item
   file and opens cleanly.
3. Hostile text in prompts, outputs, categories, item ids, model and sweep names: the pages show it as text and run
   none of it, with the Content-Security-Policy and with it bypassed (the escaping alone)."""
import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from PIL import Image

from mmresearch.explorer import DATA_DIR, EXPLORER_PAGE, IMAGES_FILE, save_images, write_run_explorer, write_sweep_explorer
from mmresearch.report import read_manifest, run_report_notebook, write_json
from mmresearch.sweep import run_sweep

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[1]
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium (`make chromium`)")


def key(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    "An item's key as report.item_key documents it: the columns' values as text, joined by the unit separator."
    return df[cols].astype(str).agg("\x1f".join, axis=1)


def watched(browser, bypass_csp: bool = False):
    "A new page whose console errors and warnings, page errors and network requests (aborted) are recorded."
    page = browser.new_context(bypass_csp=bypass_csp, viewport={"width": 1300, "height": 1000}).new_page()
    problems, blocked = [], []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else (blocked.append(route.request.url), route.abort()))
    return page, problems, blocked


def ready(page):
    "Wait until every sample the view needs has been read (the page sets body[data-ready='1'])."
    page.wait_for_selector("body[data-ready='1']")


def shown_items(page, selector: str) -> list[str]:
    "The item keys of the cards (or pairs) on the page."
    loc = page.locator(selector)
    return [loc.nth(i).get_attribute("data-item") for i in range(loc.count())]


@needs_chromium
def test_sweep_explorer_filters_and_paired_cells(tmp_path):
    from playwright.sync_api import expect, sync_playwright
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    params = tmp_path/"disc.yaml"
    params.write_text(yaml.safe_dump({"name": "disc", "notebook": str(ROOT/"nbs"/"experiments"/"haleval_disc.ipynb"), "headline": "f1",
                                      "fixed": {"n_samples": 4, "n_boot": 200, "score_yes": False},
                                      "grid": {"model": ["scripted:yes", "scripted:coin"]}}))
    res = run_sweep(params, workers=2, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert all(r.status == "ok" for r in res.runs) and res.summary_error is None, res.describe()
    yes_run, coin_run = (r.run for r in res.runs)                              # grid order
    item_cols = ["domain", "sample_id", "caption_type", "caption"]
    a, b = (pd.read_parquet(res.sweep_dir/r/"samples.parquet").assign(key=lambda d: key(d, item_cols)) for r in (yes_run, coin_run))
    # the coin's wrong answers on relation captions, read from its samples: answered, read, and not the gold answer
    wrong_rel = set(b[(b.caption_type == "relation") & b.error.isna() & b.pred.notna() & (b.pred != b.label)].key)
    both = a.merge(b, on="key", suffixes=("_a", "_b"))
    both = both[both.error_a.isna() & both.error_b.isna() & both.pred_a.notna() & both.pred_b.notna()]
    right_a, right_b = both.pred_a == both.label_a, both.pred_b == both.label_b
    cells = {1: set(both.key[right_a & ~right_b]), 2: set(both.key[~right_a & right_b])}   # McNemar's discordant cells
    assert wrong_rel and cells[1] and cells[2]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page, problems, blocked = watched(browser)
        page.goto((tmp_path/"reports"/"index.html").as_uri())
        page.click(f"a[href$='{coin_run}/{EXPLORER_PAGE}']")                   # the run's "samples" link
        ready(page)
        assert page.locator("#list article").count() == min(50, len(b))
        page.locator("select[name='outcome']").select_option("wrong")
        page.locator("select[name='g.caption_type']").select_option("relation")
        page.wait_for_url(lambda u: "outcome=wrong" in u and "g.caption_type=relation" in u)
        expect(page.locator("#list article")).to_have_count(len(wrong_rel))
        assert set(shown_items(page, "#list article")) == wrong_rel
        assert all(t == "wrong" for t in page.locator("#list article .badge").all_inner_texts())
        shared = page.url
        page.screenshot(path=str(tmp_path/"filtered.png"), full_page=True)

        words = b.caption[b.caption_type == "object"].iloc[0].split()[-3:]     # a search: the end of an object caption
        query = " ".join(words).lower()
        text = (b.sample_id + " · " + b.caption_type + "\n" + b.question + "\n" + b.raw.fillna("") + "\n" + b.error.fillna("")).str.lower()
        found = set(b.key[text.str.contains(query, regex=False)])              # what the name, prompt or answer holds
        page.locator("input[name='q']").fill(" ".join(words))
        page.locator("input[name='q']").press("Enter")
        page.wait_for_url(lambda u: "q=" in u)
        expect(page.locator("#list article")).to_have_count(len([k for k in found if k in wrong_rel]))   # with the filters kept
        page.locator("a#clear").click()
        page.locator("input[name='q']").fill(" ".join(words))
        page.locator("input[name='q']").press("Enter")
        expect(page.locator("#list article")).to_have_count(len(found))
        assert found and set(shown_items(page, "#list article")) == found
        page.goto(shared)                                                      # back to the filtered view
        expect(page.locator("#list article")).to_have_count(len(wrong_rel))

        other, problems2, blocked2 = watched(browser)                          # the shared link, opened afresh
        other.goto(shared)
        ready(other)
        expect(other.locator("#list article")).to_have_count(len(wrong_rel))
        assert set(shown_items(other, "#list article")) == wrong_rel
        assert other.locator("select[name='outcome']").input_value() == "wrong"

        page.click("nav a:text('sweep summary')")                              # from the explorer to the summary
        page.wait_for_load_state("load")
        assert page.url.endswith("summary.html")
        for cell, expected in cells.items():
            link = page.locator(f"a[href='{EXPLORER_PAGE}#pair=0&cell={cell}']")
            assert link.inner_text() == str(len(expected))                     # the count in the paired table
            link.click()
            ready(page)
            expect(page.locator("#list .pair")).to_have_count(len(expected))
            assert set(shown_items(page, "#list .pair")) == expected           # exactly its items
            assert page.locator("#list .pair").first.locator("article").count() == 2   # both runs side by side
            page.screenshot(path=str(tmp_path/f"cell{cell}.png"), full_page=True)
            page.go_back(); page.wait_for_load_state("load")
        browser.close()
    assert problems == [] and problems2 == [], problems + problems2      # no error, no warning, no CSP violation
    assert blocked == [] and blocked2 == []                                # nothing needed the network


STUDIES = {"smoke": "samples.parquet", "pope": "samples.parquet", "haleval_disc": "samples.parquet", "haleval_gen": "samples.parquet",
           "mmbench": "items.parquet", "t2i_judge": "samples.parquet", "amber": "samples.parquet", "hallusionbench": "samples.parquet",
           "mme": "samples.parquet", "objhal": "samples.parquet", "mmhal": "samples.parquet", "t2i_human": "samples.parquet"}
ONE_ITEM_PER = {"t2i_judge": "sample_id", "t2i_human": "image_id"}   # rows per question or judge: one item per image


def test_every_study_declares_its_view():
    "Every experiment notebook that writes per-item results has its own sample view, and the browser test below opens it."
    from mmresearch.registry import get_sample_view
    studies = sorted(p.stem for p in (ROOT/"nbs"/"experiments").glob("*.ipynb")
                     if "samples.parquet" in p.read_text(encoding="utf-8") and not p.stem.endswith("summary"))
    assert len(studies) >= 12 and [s for s in studies if get_sample_view(s) is None] == [] and set(studies) == set(STUDIES)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def chunk_items(run_dir: Path) -> list[dict]:
    "Every item of a run's explorer, read back from its data files (each a call MMR.chunk(name, k, columns)): i, and its fields in `cols`."
    out = []
    for f in sorted((run_dir/DATA_DIR).glob("items-*.js")):
        m = re.fullmatch(r'MMR\.chunk\("[^"]*", (\d+), (.*)\);\n', f.read_text(encoding="utf-8"), re.S)
        c = json.loads(m.group(2))
        out += [{"i": c["start"] + r, **{k: v[r] for k, v in c["cols"].items() if v[r] is not None}} for r in range(c["n"])]
    return out


@needs_chromium
@pytest.mark.parametrize("study", list(STUDIES))
def test_every_study_explorer(study, tmp_path, browser):
    out = tmp_path/study
    run_report_notebook(ROOT/"nbs"/"experiments"/f"{study}.ipynb", tmp_path/"run.ipynb", cwd=ROOT,
                        parameters={"output_dir": str(out), "cache_path": str(tmp_path/"c.sqlite")})
    write_json(out/"manifest.json", {**read_manifest(out), "notebook": f"nbs/experiments/{study}.ipynb"})   # as a sweep records it
    page_path = write_run_explorer(out)
    rows = pd.read_parquet(out/STUDIES[study])
    n = rows[ONE_ITEM_PER[study]].nunique() if study in ONE_ITEM_PER else len(rows)
    items = chunk_items(out)
    assert [it["i"] for it in items] == list(range(n))
    images = json.loads((out/IMAGES_FILE).read_text())
    without = (rows.visual_input == "0").tolist() if study == "hallusionbench" else [False] * n   # asked without a figure
    assert 0 < sum(without) < n if study == "hallusionbench" else True
    for it, none in zip(items, without):
        if none: assert "img" not in it; continue
        assert it["img"] == images[it["smp"]]                                  # every item shows its image ...
        f = out/it["img"]
        assert hashlib.sha256(f.read_bytes()).hexdigest().startswith(f.stem)   # ... a file named by its content
    if "error" in rows:                                                        # one item per row: failed exactly where the call failed
        assert [it.get("v") == "failed" for it in items] == rows.error.notna().tolist()
    page, problems, blocked = watched(browser)
    page.goto(page_path.as_uri())
    ready(page)
    assert page.locator("#list article").count() == min(50, n)
    assert page.locator("#list article img").count() == sum(not none for none in without[:50])
    assert problems == [] and blocked == [], problems + blocked
    page.close()


PWN = "window.__pwned"
HOSTILE = {"sweep": f'</script><script>{PWN}="sweep"</script>',
           "model_a": f'<script>{PWN}="model"</script>', "model_b": f'"><img src=x onerror="{PWN}=\'model-b\'">',
           "question": f'Is there a <img src=x onerror="{PWN}=\'prompt\'"> in the image?',
           "raw": f'<script>{PWN}="output"</script> Yes',
           "split": f'<b onmouseover="{PWN}=\'split\'">adversarial</b>',
           "question_id": f'q"><svg onload="{PWN}=\'id\'">'}


@pytest.fixture(scope="module")
def hostile_sweep(tmp_path_factory):
    "A sweep folder of two POPE runs whose every text field is markup and script, written by the explorer's own functions."
    sweep = tmp_path_factory.mktemp("hostile")/"hostile"
    runs = {"model=a": HOSTILE["model_a"], "model=b": HOSTILE["model_b"]}
    for run, model in runs.items():
        d = sweep/run; d.mkdir(parents=True)
        write_json(d/"manifest.json", {"sweep": HOSTILE["sweep"], "run": model, "notebook": "nbs/experiments/pope.ipynb"})
        rows = pd.DataFrame({"question_id": [HOSTILE["question_id"], "q2"], "sample_id": ["s1", "s2"], "domain": ["d", "d"],
                             "split": [HOSTILE["split"], "random"], "object": ["dog", "cat"], "label": ["yes", "no"],
                             "question": [HOSTILE["question"], "Is there a cat?"], "raw": [HOSTILE["raw"], "No" if run == "model=a" else "Yes"],
                             "parsed": ["yes", "no" if run == "model=a" else "yes"], "parse_ok": [True, True], "parse_method": ["final"] * 2,
                             "parser": ["pope"] * 2, "policy": ["positive"] * 2, "error": [None, None]})
        rows.to_parquet(d/"samples.parquet")
        pd.DataFrame({"split": [HOSTILE["split"], "random"], "metric": ["accuracy"] * 2, "value": [100.0, 50.0]}).to_csv(d/"metrics.csv", index=False)
        save_images(d, {"s1": Image.new("RGB", (8, 8), "red"), "s2": Image.new("RGB", (8, 8), "blue")})
        images = json.loads((d/IMAGES_FILE).read_text())
        write_json(d/IMAGES_FILE, {**images, "s2": f"javascript:{PWN}='href'"})   # a tampered image path is never used
        write_run_explorer(d)
    write_json(sweep/"sweep.json", {"name": HOSTILE["sweep"], "notebook": "nbs/experiments/pope.ipynb", "grid_keys": ["model"],
                                    "runs": [{"run": r, "status": "ok", "grid": {"model": m}} for r, m in runs.items()]})
    write_sweep_explorer(sweep)
    return sweep


def test_hostile_text_is_escaped_in_the_explorer(hostile_sweep):
    for page in [hostile_sweep/EXPLORER_PAGE, *(hostile_sweep/r/EXPLORER_PAGE for r in ("model=a", "model=b"))]:
        text = page.read_text()
        assert len(re.findall(r"<script\b", text)) == 2                       # the settings (JSON, never run) and the app
        assert not re.search(r"<(img|svg|b)\b[^>]*\bon\w+=", text), page     # no live event handler
        assert "<script>" + PWN not in text and "</script><script>" + PWN not in text
        assert "unsafe-inline" not in text and "unsafe-eval" not in text
    for run in ("model=a", "model=b"):
        items = chunk_items(hostile_sweep/run)
        assert items[0]["p"] == HOSTILE["question"] and items[0]["o"] == HOSTILE["raw"]   # valid JSON, the text exactly
        assert "img" not in items[1]                                            # the tampered path was dropped


@needs_chromium
@pytest.mark.parametrize("bypass_csp", [False, True])
def test_no_script_runs_in_the_explorer(hostile_sweep, browser, bypass_csp):
    from playwright.sync_api import expect
    dialogs, problems, blocked = [], [], []
    for url in [(hostile_sweep/"model=a"/EXPLORER_PAGE).as_uri(), (hostile_sweep/EXPLORER_PAGE).as_uri() + "#pair=0",
                (hostile_sweep/EXPLORER_PAGE).as_uri()]:
        page, problems_, blocked_ = watched(browser, bypass_csp=bypass_csp)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(url)
        ready(page)
        page.locator("#list article").first.hover()
        body = page.inner_text("body")
        for k in ("question", "raw", "split", "question_id"): assert HOSTILE[k] in body, (url, k)   # shown, as text
        assert page.evaluate("window.__pwned") is None, (url, page.evaluate("window.__pwned"))
        assert page.locator("img[src^='javascript']").count() == 0
        problems += problems_; blocked += blocked_
    page.locator("select[name='g.split']").select_option(HOSTILE["split"])     # the sweep page: a filter on a hostile category
    expect(page.locator("#list article")).to_have_count(2)                     # each run's first item
    assert HOSTILE["model_b"] in page.inner_text("body") and HOSTILE["sweep"] in page.title()
    assert page.evaluate("window.__pwned") is None
    assert dialogs == [] and blocked == []
    assert bypass_csp or problems == [], problems


@needs_chromium
def test_keys_named_like_object_properties(tmp_path, browser):
    "A run and a group named '__proto__' and 'constructor', and links asking for such keys: the page works, nothing throws."
    from playwright.sync_api import expect
    sweep = tmp_path/"protosweep"
    for run in ("__proto__", "constructor"):
        d = sweep/run; d.mkdir(parents=True)
        write_json(d/"manifest.json", {"sweep": "proto", "run": run, "notebook": "nbs/experiments/pope.ipynb"})
        pd.DataFrame({"question_id": ["q1", "q2"], "sample_id": ["s1", "s2"], "domain": ["d", "d"], "split": ["__proto__", "constructor"],
                      "object": ["dog", "cat"], "label": ["yes", "no"], "question": ["Is there a dog?", "Is there a cat?"], "raw": ["Yes", "No"],
                      "parsed": ["yes", "no"], "parse_ok": [True, True], "parse_method": ["final"] * 2, "parser": ["pope"] * 2,
                      "policy": ["positive"] * 2, "error": [None, None]}).to_parquet(d/"samples.parquet")
        write_run_explorer(d)
    write_json(sweep/"sweep.json", {"name": "proto", "notebook": "nbs/experiments/pope.ipynb", "grid_keys": ["run"],
                                    "runs": [{"run": r, "status": "ok", "grid": {"run": r}} for r in ("__proto__", "constructor")]})
    write_sweep_explorer(sweep)
    page, problems, blocked = watched(browser)
    for hash_, shown in (("#run=__proto__", 2), ("#run=constructor&g.split=__proto__", 1), ("#run=toString", 4), ("#g.__proto__=x", 0),
                         ("#j.constructor=none", 4), ("#cmp=__proto__&cell=0", 0)):
        page.goto((sweep/EXPLORER_PAGE).as_uri() + hash_)
        ready(page)
        expect(page.locator("#list article")).to_have_count(shown)              # before: run=__proto__ threw (not iterable)
    assert problems == [] and blocked == [], problems + blocked
    page.close()
