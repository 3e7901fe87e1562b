"Parser sensitivity on LLaVA-1.5-13B's published POPE answers (tests/fixtures/pope_real/llava15, see its README)."
import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from mmresearch.parsing import YES_NO_CHAINS, Chain, parser_sensitivity

LLAVA = Path(__file__).parent/"fixtures"/"pope_real"/"llava15"
OFFICIAL_COUNTS = {"adversarial": (1182, 117, 1383, 318), "popular": (1182, 59, 1441, 318), "random": (1182, 31, 1379, 318)}


def _lines(path: Path) -> list[dict]:
    return [json.loads(l) for l in gzip.decompress(path.read_bytes()).decode().splitlines() if l.strip()]


@pytest.fixture(scope="module")
def llava_rows() -> pd.DataFrame:
    "One row per published answer: raw text, gold label (the split's label file, in line order), image, split."
    questions = {q["question_id"]: q for q in _lines(LLAVA/"llava_pope_test.jsonl.gz")}
    answers = _lines(LLAVA/"llava-v1.5-13b.jsonl.gz")
    rows = []
    for split in OFFICIAL_COUNTS:
        labels = _lines(LLAVA/"coco"/f"coco_pope_{split}.json.gz")
        mine = [a for a in answers if questions[a["question_id"]]["category"] == split]
        assert len(mine) == len(labels)
        rows += [{"raw": a["text"], "label": l["label"], "image": l["image"], "split": split} for a, l in zip(mine, labels)]
    return pd.DataFrame(rows)


def test_chains_agree_on_llava15_single_word_answers(llava_rows):
    t = parser_sensitivity(llava_rows, cluster="image", n_boot=200)
    acc = t[t.metric == "accuracy"].set_index("chain")
    tp, fp, tn, fn = (sum(c[k] for c in OFFICIAL_COUNTS.values()) for k in range(4))
    assert acc.value["pope"] == pytest.approx(100 * (tp + tn) / (tp + fp + tn + fn))    # POPE's own pooled accuracy
    assert (acc.agreement == 100).all() and (acc.n_disagree == 0).all() and (acc["diff"] == 0).all()
    assert (acc.n == 8910).all() and (acc.n_clusters == llava_rows.image.nunique()).all() and set(acc.cluster) == {"image"}
    assert (acc.parse_failure_rate == 0).all()


def test_chains_part_ways_once_answers_are_sentences(llava_rows):
    "The same verdicts re-worded as sentences a chatty model would write: the chains now disagree, by known amounts."
    wordy = {"Yes": "Yes, there is one, but no other objects of that kind.",  # final: yes; pope: no; vlmevalkit: unknown
             "No": "No, there is not one in the image."}                        # all three: no
    rows = llava_rows.assign(raw=llava_rows.raw.map(wordy))
    t = parser_sensitivity(rows, cluster="image", n_boot=200)
    acc = t[t.metric == "accuracy"].set_index("chain")
    n_yes = int((llava_rows.raw == "Yes").sum())
    assert acc.n_disagree["pope"] == n_yes                  # every "Yes" sentence becomes "no" under POPE's rule
    assert acc.n_disagree["vlmevalkit"] == n_yes            # unknown -> "no" under the negative policy
    assert acc.agreement["pope"] == pytest.approx(100 * (1 - n_yes / 8910))
    tp, fp, tn, fn = (sum(c[k] for c in OFFICIAL_COUNTS.values()) for k in range(4))
    assert acc.value["ours"] == pytest.approx(100 * (tp + tn) / 8910)          # ours still reads every verdict
    assert acc.value["pope"] == pytest.approx(100 * (fp + tn) / 8910)          # POPE's rule: every answer "no"
    assert acc.diff_ci_high["pope"] < 0                     # a real, interval-backed drop


def test_unknown_parser_is_named():
    with pytest.raises(ValueError, match="unknown parser 'vqa'"):
        parser_sensitivity(pd.DataFrame({"raw": ["Yes"], "label": ["yes"]}), chains=[Chain("x", "vqa")])
