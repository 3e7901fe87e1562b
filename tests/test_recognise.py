"""Each module declares how to recognise the files it reads (`registry.recognises`, issue 41): on every data file in
tests/fixtures at most one declared kind matches (so the order of declaration never decides), and the real files are
named for what they are."""
from pathlib import Path

import pytest

from mmresearch.benchmarks import first_record, identify_file
from mmresearch.registry import file_kinds

FIX = Path(__file__).parent/"fixtures"
DATA = sorted(p for ext in ("*.json", "*.jsonl", "*.json.gz", "*.jsonl.gz", "*.tsv", "*.csv") for p in FIX.rglob(ext))


@pytest.mark.parametrize("path", DATA, ids=lambda p: str(p.relative_to(FIX)))
def test_at_most_one_kind_matches(path):
    rec = first_record(path)
    matches = [k.what for k in file_kinds() if isinstance(rec, dict) and k.test(rec)]
    assert len(matches) <= 1, (path, matches)


@pytest.mark.parametrize("name, kind", [
    ("haleval_real/in_domain_excerpt.json", "a Hal-Eval evaluation file"),
    ("amber/query/query_all.json", "an AMBER query file"),
    ("amber/annotations.json", "AMBER's annotations.json"),
    ("amber/responses.json", "an AMBER response file"),
    ("coco_real/captions_val2014_excerpt.json", "COCO caption annotations (captions_*.json)"),
    ("coco_real/instances_val2014_excerpt.json", "COCO instance annotations (instances_*.json)"),
    ("chair/halc_minigpt4_greedy_12_chair_results.json", "a CHAIR tool output"),
    ("pope_real/coco_pope_adversarial_head.jsonl", "a POPE question file"),
    ("pope_real/example_answer.json", "POPE's {question, answer} answer file"),
    ("mmbench/mmbench_dev_20230712_questions_excerpt.tsv", "an MMBench TSV"),
    ("mmbench/llava-v1.5-13b_mmbench_dev_20230712_excerpt.tsv", "a predictions table in VLMEvalKit's layout"),
    ("folder/captions.csv", "a captions.csv of an image folder"),
    ("mmhal/response_template.json", "an MMHal-Bench response file"),
    ("objhal/questions.jsonl", "an Object HalBench question file"),
    ("objhal/answers_handmade.jsonl", "an Object HalBench answer file"),
    ("pope_real/llava15/llava-v1.5-13b.jsonl.gz", "an answer file of POPE or LLaVA"),
    ("hallusionbench/HallusionBench_sample_questions.json.gz", "HallusionBench's question file"),
    ("hallusionbench/HallusionBench_result_sample.json.gz", "a HallusionBench result file"),
    ("repope/coco_repope_adversarial.json.gz", "a POPE question file"),
])
def test_real_files_are_named_for_what_they_are(name, kind):
    assert identify_file(FIX/name) == kind
