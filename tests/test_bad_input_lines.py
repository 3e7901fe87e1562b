"""Issue 39, "bad input, one clear line each": each case here was a traceback, an unbounded message or a silent
acceptance before. RePOPE's labels missing, a file, a cut .gz or not UTF-8; a decompression-bomb image names its file
or TSV row; an error quoting a huge field is cut; a Hal-Eval record without `hal_caption` is refused and named; a sweep
whose every run failed gets a summary saying so; category names from a data file are text in every sentence."""
import base64
import gzip
import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from mmresearch.core import ImageDecodeError, ImageRef
from mmresearch.datasets import DataFormatError, load_haleval
from mmresearch.mmbench import load_mmbench_tsv
from mmresearch.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"
LLAVA = FIX/"pope_real"/"llava15"


def score(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def one_line(out: subprocess.CompletedProcess, *needles: str) -> None:
    "Exit 2, one line on stderr holding every needle, no traceback."
    err = out.stderr.strip()
    assert out.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err[:3000]
    for n in needles: assert n in err, err


def png_claiming(w: int, h: int) -> bytes:
    "The first bytes of a PNG that claims w x h pixels (Pillow refuses it while opening: more than twice its own limit)."
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))


def test_score_pope_repope_folder_problems_are_one_line(tmp_path):
    base = ["pope", "--input", str(LLAVA/"llava-v1.5-13b.jsonl.gz"), "--questions", str(LLAVA/"llava_pope_test.jsonl.gz"),
            "--labels", str(LLAVA/"coco"), "--n-boot", "20", "--repope"]
    one_line(score(*base, str(tmp_path/"missing")), "missing does not exist: give RePOPE's annotations/ folder")
    one_line(score(*base, str(FIX/"repope"/"coco_repope_random.json.gz")), "is a file, not a folder")
    cut = tmp_path/"cut"; shutil.copytree(FIX/"repope", cut)
    (cut/"coco_repope_random.json.gz").write_bytes((FIX/"repope"/"coco_repope_random.json.gz").read_bytes()[:200])
    one_line(score(*base, str(cut)), "coco_repope_random.json.gz: not a complete gzip file")
    latin = tmp_path/"latin"; shutil.copytree(FIX/"repope", latin)
    text = gzip.decompress((FIX/"repope"/"coco_repope_popular.json.gz").read_bytes()).replace(b"umbrella", b"parapluie \xe9", 1)
    (latin/"coco_repope_popular.json.gz").write_bytes(gzip.compress(text))
    one_line(score(*base, str(latin)), "coco_repope_popular.json.gz: line", "not UTF-8 text (byte 0xe9")


def test_a_decompression_bomb_names_its_file_or_tsv_row(tmp_path):
    rows = (FIX/"mmbench_tiny.tsv").read_text().splitlines()
    head, first = rows[0], rows[1].split("\t")
    first[head.split("\t").index("image")] = base64.b64encode(png_claiming(30000, 30000)).decode()
    (tmp_path/"bomb.tsv").write_text("\n".join([head, "\t".join(first), *rows[2:]]) + "\n")
    item = load_mmbench_tsv(tmp_path/"bomb.tsv").items[0]
    with pytest.raises(ImageDecodeError, match=r"bomb.tsv#index=1"): item.image.load()
    (tmp_path/"val2014").mkdir(); (tmp_path/"val2014"/"big.png").write_bytes(png_claiming(30000, 30000))
    recs = json.loads((FIX/"haleval_real"/"in_domain_excerpt.json").read_text())[:1]; recs[0]["image"] = "val2014/big.png"
    (tmp_path/"in.json").write_text(json.dumps(recs))
    with pytest.raises(DataFormatError, match=r"in.json: item \[0\]: cannot decode image .*big.png"):
        load_haleval(tmp_path/"in.json", image_root=tmp_path, verify="decode")


def test_an_error_quoting_a_huge_field_is_cut(tmp_path):
    huge = "x" * 20_000_000                                   # 20 MB: the same bound holds for 200 MB, only slower to make
    (tmp_path/"p.jsonl").write_text(json.dumps({"sample_id": "s1", "caption_type": huge, "answer": "yes"}) + "\n")
    out = score("haleval-disc", "--input", str(tmp_path/"p.jsonl"))
    one_line(out, "caption_type")                           # the field named, its value cut
    assert len(out.stderr) < 3_000 and "more characters not shown" in out.stderr


def test_a_haleval_record_without_hal_caption_is_refused_or_dropped_and_named(tmp_path):
    recs = json.loads((FIX/"haleval_real"/"in_domain_excerpt.json").read_text())
    del recs[1]["hal_caption"]; recs[2]["hal_caption"] = []
    (tmp_path/"in.json").write_text(json.dumps(recs))
    with pytest.raises(DataFormatError, match=r"in.json: item \[1\]: no 'hal_caption' list"):
        load_haleval(tmp_path/"in.json", image_root=tmp_path, verify="none")
    ds = load_haleval(tmp_path/"in.json", image_root=tmp_path, verify="none", lenient=True)
    assert (len(ds), ds.stats.skipped) == (len(recs) - 2, 2)
    assert [p.split(": ")[1] for p in ds.stats.problems] == ["item [1]", "item [2]"]


def test_a_sweep_whose_every_run_failed_says_none_finished(tmp_path):
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    p = tmp_path/"params"/"f.yaml"; p.parent.mkdir()
    p.write_text(json.dumps({"name": "allfail", "notebook": str(ROOT/"nbs/experiments/haleval_disc.ipynb"),
                             "summary": str(ROOT/"nbs/experiments/haleval_disc_summary.ipynb"),
                             "fixed": {"domain": "haleval_in_domain", "data_dir": str(tmp_path/"nowhere"), "n_boot": 20},
                             "grid": {"cot": [False, True]}}))
    res = run_sweep(p, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert [r.status for r in res.runs] == ["failed", "failed"] and res.summary_error is None, res.describe()
    page = (res.sweep_dir/"summary.html").read_text()
    assert "None of the 2 runs of this sweep finished" in page and "nowhere is not a folder" in page and "Traceback" not in page


def handlers(page: str) -> list[str]:
    "The tags of `page` that carry an event-handler attribute (onerror, onload, ...)."
    from html.parser import HTMLParser
    found = []
    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs): found.extend(tag for name, _ in attrs if name.startswith("on"))
    Parser().feed(page)
    return found


def test_category_names_from_a_tsv_are_text_in_every_sentence(tmp_path):
    evil = '<img src=x onerror="window.pwned=1">'
    rows = (FIX/"mmbench_tiny.tsv").read_text().splitlines()
    col = rows[0].split("\t").index("category")
    out = [rows[0]] + ["\t".join(c if i != col else evil for i, c in enumerate(r.split("\t"))) for r in rows[1:]]
    (tmp_path/"data").mkdir(); (tmp_path/"data"/"evil.tsv").write_text("\n".join(out) + "\n")
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    p = tmp_path/"params"/"m.yaml"; p.parent.mkdir()
    p.write_text(json.dumps({"name": "evil", "notebook": str(ROOT/"nbs/experiments/mmbench.ipynb"),
                             "fixed": {"domain": "mmbench_tsv", "data": str(tmp_path/"data"/"evil.tsv"), "n_items": 0, "n_boot": 20},
                             "grid": {"model": ["scripted:letter_a", "oracle:1.0"]}, "headline": "circular_accuracy"}))
    res = run_sweep(p, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert {r.status for r in res.runs} == {"ok"}, res.describe()
    pages = [*res.sweep_dir.rglob("*.html"), tmp_path/"reports"/"index.html"]
    for page in pages:                                         # no element made of it: parsed as a browser would
        assert not handlers(page.read_text()), page
    assert any("&lt;img src=x" in page.read_text() for page in pages if page.name == "run.html")   # shown, as text
