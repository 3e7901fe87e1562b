"""Real reasoning-model completions (a Qwen2.5-VL policy trained to reason in <think> tags, evaluation log of
JuncyLu/trl_DAPO; tests/fixtures/README.md): every parser reads the final answer, never the reasoning, and a
completion whose reasoning never ends has no final answer."""
import json
import re
from pathlib import Path

import pytest

from mmresearch.core import Response
from mmresearch.mmbench import MCItem, extract_choices
from mmresearch.parsing import final_answer
from mmresearch.t2i_judge import InvalidVerdict, parse_score, parse_verdict

LOG = json.loads((Path(__file__).parent/"fixtures"/"reasoning"/"trl_dapo_eval_completions.json").read_text())
# sample number -> the final answer a reader finds; None: the completion ends inside its reasoning (or its answer tag
# is broken: sample 1 writes "<answe\nA</answer>"), so it has no final answer. Sample 2 writes <answer>A</answer>
# inside a think block it never closes: that tag is reasoning, so it has none either (issue 41)
EXPECTED = {1: None, 2: None, 3: "C", 7: "C", 8: None, 9: None, 10: "C", 11: "C"}


def item(rec: dict) -> MCItem:
    lines = rec["question"].strip().split("\n")
    options = dict(re.match(r"([A-D]): (.*)", l).groups() for l in lines[1:])
    return MCItem(index=rec["sample"], question=lines[0], options=options, answer="C", category="log")


def test_fixture_covers_each_case():
    assert sorted(EXPECTED) == [r["sample"] for r in LOG]
    assert sum(v is None for v in EXPECTED.values()) == 4 and sum("<think>" in r["completion"] for r in LOG) == 7


@pytest.mark.parametrize("rec", LOG, ids=lambda r: f"sample{r['sample']}")
def test_final_answer(rec):
    got = final_answer(rec["completion"])
    assert (got.strip() if got is not None else None) == EXPECTED[rec["sample"]]


def test_letters_come_from_the_final_answer():
    "MMBench's choice extraction: the answer tag's letter; no final answer -> the 'none' letter (wrong), never a letter of the reasoning."
    passes = [item(r) for r in LOG]
    out = extract_choices(passes, [Response(r["completion"]) for r in LOG]).set_index("index")
    for n, want in EXPECTED.items():
        if want is None: assert (out.step[n], out.choice[n], bool(out.correct[n])) == ("no_final_answer", "Z", False)
        else: assert out.choice[n] == want and out.step[n] in ("exact", "rule")
    # sample 9 says "C" first, then starts reasoning it never finishes: not read as C
    assert out.choice[9] == "Z" and "C\n<think>" in LOG[[r["sample"] for r in LOG].index(9)]["completion"]


def test_scores_and_json_come_from_the_final_answer():
    "The T2I judge's score and JSON parsers: numbers and braces in the reasoning are not read."
    assert parse_score("<think>Maybe 2? The colours match, so 4 of 5.</think>\n4", 5).score == 4
    assert parse_verdict('<think>{draft} score 1?</think>{"score": 3, "explanation": "the dog is there"}', 4).score == 3
    for unfinished in ("<think>It could be a 3 or", LOG[-3]["completion"]):
        with pytest.raises(InvalidVerdict, match="no final answer"): parse_score(unfinished, 5)
        with pytest.raises(InvalidVerdict, match="no final answer"): parse_verdict(unfinished, 5)


@pytest.mark.parametrize("text, want", [
    ("<think>I think <answer>yes</answer> but still thinking", None),          # the think block never closes
    ("<think>Draft: <answer>yes</answer>. Check again.</think><answer>no</answer>", "no"),   # the final one wins
    ("<think>Draft: <answer>yes</answer>.</think> No, there is none.", "No, there is none."),   # no answer tag after it
    ("<think>Draft: <answer>B</answer></think>", None),                        # only reasoning, with a draft inside it
    ("<think>a</think><answer>A</answer> then <answer>C</answer>", "C"),      # the last closed block after the reasoning
    ("<answer>yes</answer>", "yes"),                                           # no reasoning: the answer block
])
def test_an_answer_inside_reasoning_is_never_read(text, want):
    "Only the text after the last closed think block counts (issue 41): a draft <answer> inside the reasoning is reasoning."
    assert final_answer(text) == want
