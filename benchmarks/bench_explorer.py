"""How fast a large run's explorer is written and opened (issue 43): a Hal-Eval discriminative run on 5,000 records of
its in-domain file (the size of one of its files: 25,000 questions, each record its own 640x480 JPEG, built as
bench_run_haleval.py builds them), answered by a scripted model through the cache as a study runs. Timed, each on a
fresh copy of the run's files: `save_images` (the experiment notebook's call) and `write_run_explorer` (what
`sweep.render_run_pages` calls), the median of several runs and the first, which pays the study module's imports, as a
sweep's worker does once; the largest file written; then Debian Chromium opening explorer.html from file://, time to
the first page of samples drawn and to every sample read (the page records both, in ms since navigation start), and a
text search over all of them. Prints figures and the machine's load; asserts nothing about time.
Run: .venv/bin/python benchmarks/bench_explorer.py [--records 5000] [--runs 5]"""
import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_run_haleval   # noqa: E402  the same Hal-Eval folder, one JPEG per record

from mmresearch.cache import CachedModel, ResponseCache   # noqa: E402
from mmresearch.core import Request   # noqa: E402
from mmresearch.datasets import load_domain   # noqa: E402
from mmresearch.explorer import DATA_DIR, EXPLORER_PAGE, save_images, write_run_explorer   # noqa: E402
from mmresearch.haleval import disc_metrics, run_discriminative   # noqa: E402
from mmresearch.models import ScriptedModel   # noqa: E402
from mmresearch.report import write_csv, write_json   # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ANSWERS = ("Yes", "No", "Yes, the caption matches the image.", "No, there is no such thing in the image.", "I cannot tell.")


def answer(r: Request) -> str:
    "A reproducible mix of answers, unreadable ones included: chosen by the question's length."
    return ANSWERS[len(r.messages[-1].text) % len(ANSWERS)]


def distinct_picture(i: int, path: Path) -> None:
    "bench_run_haleval's picture, made distinct for every i below 65,536 (its own repeats every 256: its channels are i mod 256)."
    y, x = np.mgrid[0:bench_run_haleval.SIZE[1], 0:bench_run_haleval.SIZE[0]]
    rgb = np.stack([(x + 7 * i) % 256, (y + 13 * i) % 256, (x + y + i + 5 * (i // 256)) % 256], -1).astype(np.uint8)
    Image.fromarray(rgb).save(path, quality=90)


def build_run(root: Path, records: int) -> tuple[Path, list]:
    "The run's files as the experiment notebook writes them (samples.parquet, metrics.csv, manifest.json), and its samples."
    bench_run_haleval.picture = distinct_picture   # haleval_folder draws with it: one image per record
    samples = list(load_domain("haleval_in_domain", data_dir=bench_run_haleval.haleval_folder(root/"haleval", records)))
    rows = run_discriminative(samples, CachedModel(ScriptedModel(answer, name="mix"), ResponseCache(root/"c.sqlite")))
    run = root/"run"; run.mkdir()
    rows.to_parquet(run/"samples.parquet", index=False)
    write_csv(disc_metrics(rows, n_boot=200), run/"metrics.csv")
    write_json(run/"manifest.json", {"sweep": "bench", "run": "scripted", "notebook": "nbs/experiments/haleval_disc.ipynb"})
    return run, samples


def open_times(page_path: Path, runs: int, expect_found: int) -> tuple[list, list, list]:
    "Per opening of the page: ms to the first page of samples drawn, to every sample read, and wall seconds to a text search's result."
    from playwright.sync_api import sync_playwright
    first, ready, search = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(runs):
            page = browser.new_context().new_page()
            errors = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            first.append(int(page.get_attribute("body", "data-shown-ms"))); ready.append(int(page.get_attribute("body", "data-ready-ms")))
            t0 = time.perf_counter()
            page.locator("input[name='q']").fill("cannot tell")
            page.locator("input[name='q']").press("Enter")
            page.wait_for_selector(f"#status:text-matches('^{expect_found} samples? match')")
            search.append(time.perf_counter() - t0)
            assert not errors, errors
            page.close()
        browser.close()
    return first, ready, search


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=5000, help="Hal-Eval records (5 questions each)")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-explorer-"))
    try:
        t0 = time.perf_counter()
        run, samples = build_run(root, a.records)
        n = len(pd.read_parquet(run/"samples.parquet", columns=["sample_id"]))
        print(f"{n:,} questions on {len(samples):,} images, built and answered in {time.perf_counter() - t0:.0f} s (not timed below)")
        images, written = [], []
        for k in range(a.runs):
            copy = root/f"copy{k}"; copy.mkdir()
            for f in ("samples.parquet", "metrics.csv", "manifest.json"): shutil.copy(run/f, copy/f)
            t0 = time.perf_counter(); save_images(copy, {s.id: s.image for s in samples})
            t1 = time.perf_counter(); page = write_run_explorer(copy)
            images.append(t1 - t0); written.append(time.perf_counter() - t1)
        files = [page, *(copy/DATA_DIR).iterdir()]
        big = max(files, key=lambda f: f.stat().st_size)
        total = [i + w for i, w in zip(images, written)]
        print(f"save_images: median {statistics.median(images):.2f} s ({', '.join(f'{x:.2f}' for x in images)}); "
              f"write_run_explorer: median {statistics.median(written[1:] or written):.2f} s after the first "
              f"({', '.join(f'{x:.2f}' for x in written)}; the first pays the study's imports); "
              f"both: median {statistics.median(total):.2f} s, at most {max(total):.2f} s (goal <= 10 s)")
        print(f"{len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB; the largest {big.name} "
              f"{big.stat().st_size / 1e6:.2f} MB; {EXPLORER_PAGE} {page.stat().st_size / 1e3:.0f} KB; "
              f"images: {len(list((copy/'images').iterdir())):,} files, hard links to the dataset's")
        found = int((pd.read_parquet(run/"samples.parquet", columns=["raw"]).raw == ANSWERS[-1]).sum())   # what the search must find
        first, ready, search = open_times(page, a.runs, found)
        print(f"Chromium: first page of samples drawn at median {statistics.median(first)} ms ({', '.join(map(str, first))}), "
              f"all {n:,} samples read at {statistics.median(ready)} ms ({', '.join(map(str, ready))}) after navigation "
              f"start (goal <= 1,000 ms); a text search over them {statistics.median(search):.2f} s (wall, through Playwright)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("loadavg:", Path("/proc/loadavg").read_text().strip(), "(2 cores)")


if __name__ == "__main__":
    main()
