"""The tiny model's training data: train-split scenes and text-to-image prompts the studies never ask (disjoint from
evaluation), and a short retraining run that reproduces a stored checksum (the shipped recipe is deterministic)."""
import json
import platform
import random
from dataclasses import replace

import torch

import pytest
from mmresearch.scene_samples import make_samples
from mmresearch.scenes import SPLITS
from mmresearch.t2i_judge import T2I_CATEGORIES, prompt_set
from mmresearch.tiny import (ATTRIBUTE_WEIGHTS, AUX_AGAIN_PHASES, AUX_PAIR_PHASES, AUX_PAIR_WEIGHTS, AUX_RETURN_PHASE, AUX_SETTLE_PHASE, CHANGE_PAIRS,
                             AUX_PHASES, COLOUR_SETTLE_PHASE, EVENT_PAIR_PHASE, EVENT_PHASE, EVENT_RETURN_PHASE, EVENT_SETTLE_PHASE, FINE_PHASE,
                             FINE_WEIGHTS, PAIR_RETURN_PHASE, PAIR_SETTLE_PHASE, RELATION_PAIR_PHASES, RELATION_PHASE, RELATION_RETURN_PHASE,
                             RELATION_SETTLE_PHASE, RETURN_PHASE, SETTLE_PHASE, SETTLE_WEIGHTS, SKILL_TASKS, SKILL_WEIGHTS, STUDY_PHASES,
                             STUDY_TASKS, STUDY_WEIGHTS, TOWER_PHASE, TOWER_WEIGHTS, WHERE_PHASES, TinyLlavaConfig, TrainConfig,
                             draw_examples, state_sha256, t2i_held_out_texts, train_shipped, train_tiny, write_run)

SCENE_TASKS = ("hal_study", "hal_fine", "hal_relation", "hal_event", "event_pairs", "hal_pairs", *CHANGE_PAIRS, "mc_study", *SKILL_TASKS)
T2I_TASKS = ("vqa_study", "t2i_study")

# state_sha256 of the short run below (torch 1 thread, CPU kernels pinned to AVX2 by conftest.py); re-derive only when
# the recipe or a task maker changes on purpose
# (last: the Hal-Eval repo wording became the repository script's verbatim text, which the hal_study task asks)
SHORT_RUN_SHA256 = "f5d8962413745a54d55dad9742c2b16f2a6067f3b7059fc49134dc970ca287a1"


def test_study_tasks_train_on_train_split_scenes_only():
    train = SPLITS.index("train")
    test_scenes = {s.meta["scene"]["seed"] for s in make_samples(60, "test", seed=0)}   # the scenes the Hal-Eval studies ask about
    for task in SCENE_TASKS:
        exs = draw_examples(task, 40, random.Random(1))
        assert {e.scene.seed % 3 for e in exs} == {train}, task            # scene_seed residues keep the splits apart
        assert not {e.scene.seed for e in exs} & test_scenes, task


def test_t2i_tasks_never_use_the_studys_prompts():
    held = t2i_held_out_texts()
    assert {p.text for p in prompt_set(5, T2I_CATEGORIES, seed=0)} <= held     # the study's prompt set is held out
    for task in T2I_TASKS:
        exs = draw_examples(task, 60, random.Random(3))
        assert not [e.prompt for e in exs if any(f"'{t}'" in e.prompt or f'"{t}"' in e.prompt for t in held)], task


def test_study_tasks_have_both_answers():
    for task in ("hal_study", "hal_fine", "hal_relation", "hal_event", "event_pairs", "hal_pairs", *CHANGE_PAIRS, "vqa_study", *SKILL_TASKS):
        assert {e.label for e in draw_examples(task, 40, random.Random(4))} - {None} == {"yes", "no"}, task   # where: some open
    assert len({e.label for e in draw_examples("mc_study", 40, random.Random(4))}) == 4   # gold letters in every position


def test_checksums_run_on_the_pinned_kernels():
    "conftest.py pins AVX2 before torch loads; on an AVX-512 CPU the checksums below would not hold without it."
    if platform.machine() in ("x86_64", "AMD64"): assert torch.backends.cpu.get_cpu_capability() in ("AVX2", "DEFAULT")


def test_short_retraining_reproduces_checksum(tmp_path):
    small = TinyLlavaConfig(image_size=32, patch_size=8, vision_width=32, vision_layers=1, text_width=32, text_layers=1, heads=2)
    phases = [TrainConfig(steps=2, batch_size=4, warmup=1, seed=0, weights={"exist": 1.0}, log_every=1),
              TrainConfig(steps=3, batch_size=4, warmup=1, seed=4, weights=STUDY_WEIGHTS, log_every=1)]
    run = train_shipped(tmp_path/"tiny", phases=phases, cfg=small, vision_steps=2, later=1, threads=(1, 1), log=lambda m: None)
    assert run["state_sha256"] == SHORT_RUN_SHA256
    assert json.loads(write_run(tmp_path/"tiny", run).read_text())["threads"] == [1, 1]   # the threads it ran with
    # the last phase run on saved weights of the first (how the shipped model was made) gives the same weights
    threads = torch.get_num_threads()
    torch.set_num_threads(1)     # as the chain ran its first phase (threads[0] = 1): other thread counts sum in another order
    try: first = train_tiny(tmp_path/"first", small, phases[:1], vision_steps=2, log=lambda m: None)
    finally: torch.set_num_threads(threads)
    assert state_sha256(first["model"].model) != SHORT_RUN_SHA256
    again = train_shipped(tmp_path/"again", start=tmp_path/"first", phases=phases, later=1, threads=(1, 1), log=lambda m: None)
    assert again["state_sha256"] == SHORT_RUN_SHA256
    assert set(STUDY_TASKS) <= set(STUDY_WEIGHTS)
    assert set(SKILL_TASKS) <= set(SKILL_WEIGHTS) | set(ATTRIBUTE_WEIGHTS)
    assert [p.weights for p in STUDY_PHASES] == [STUDY_WEIGHTS, SKILL_WEIGHTS, ATTRIBUTE_WEIGHTS, TOWER_WEIGHTS, FINE_WEIGHTS,
                                                 {"where": 1.0}, {"where": 1.0}, FINE_WEIGHTS, SETTLE_WEIGHTS, {"hal_relation": 1.0, "where": 0.5},
                                                 FINE_WEIGHTS | {"hal_relation": 1.5}, SETTLE_WEIGHTS | {"hal_relation": 0.5},
                                                 {"hal_event": 1.0, "event": 0.5}, FINE_WEIGHTS | {"hal_relation": 1.5, "hal_event": 1.5},
                                                 SETTLE_WEIGHTS | {"hal_relation": 0.5, "hal_event": 0.5}, {"event_pairs": 1.0},
                                                 FINE_WEIGHTS | {"hal_relation": 1.5, "hal_event": 1.5, "event_pairs": 1.5, "hal_pairs": 2.5,
                                                                 "color": 1.0, "short": 0.5, "long": 0.5},
                                                 SETTLE_WEIGHTS | {"hal_relation": 0.5, "hal_event": 0.5, "event_pairs": 0.5, "hal_pairs": 1.0},
                                                 AUX_PAIR_WEIGHTS, AUX_PAIR_WEIGHTS, AUX_RETURN_PHASE.weights, AUX_SETTLE_PHASE.weights,
                                                 AUX_SETTLE_PHASE.weights | {"color": 2.0}, AUX_PAIR_WEIGHTS, AUX_RETURN_PHASE.weights,
                                                 AUX_SETTLE_PHASE.weights | {"color": 2.0}, AUX_PAIR_WEIGHTS, AUX_PAIR_WEIGHTS,
                                                 AUX_RETURN_PHASE.weights, AUX_SETTLE_PHASE.weights | {"color": 2.0}]
    assert STUDY_PHASES[-len(AUX_PHASES) - 7:] == AUX_PHASES + AUX_AGAIN_PHASES + RELATION_PAIR_PHASES
    for again, before in zip(AUX_AGAIN_PHASES, (AUX_PAIR_PHASES[0], AUX_RETURN_PHASE, COLOUR_SETTLE_PHASE)):   # the same phases on new seeds
        assert replace(again, seed=before.seed) == before and again.seed != before.seed
    for again, before in zip(RELATION_PAIR_PHASES, (*AUX_PAIR_PHASES, AUX_RETURN_PHASE, COLOUR_SETTLE_PHASE)):   # again, with the pair-relation heads
        assert replace(again, seed=before.seed, relations=0.0) == before and again.seed != before.seed
    for phase, before, share in ((AUX_RETURN_PHASE, PAIR_RETURN_PHASE, 0.3), (AUX_SETTLE_PHASE, PAIR_SETTLE_PHASE, 0.2)):
        assert list(phase.weights)[:len(before.weights)] == list(before.weights) and set(phase.weights) - set(before.weights) == set(CHANGE_PAIRS)
        pairs = sum(phase.weights[t] for t in CHANGE_PAIRS)
        assert abs(pairs / sum(phase.weights.values()) - share) < 1e-3   # the pairs by change are drawn `share` of the time
    assert [(p.facts, p.wrong) for p in STUDY_PHASES] == [(0.0, 0.0)] * 18 + [(1.0, 1.0)] * 12   # the auxiliary losses: the last twelve
    assert [p.relations for p in STUDY_PHASES] == [0.0] * 26 + [1.0] * 4   # the pair-relation heads: the last four
    assert [p.vision_lr_scale > 0 for p in STUDY_PHASES[3:]] == [p is not EVENT_PAIR_PHASE for p in STUDY_PHASES[3:]]   # the tower
    # learns in every phase from the eighth on but the twentieth, which runs at a higher rate on one narrow task
    assert [p.objects for p in STUDY_PHASES].count(None) == len(STUDY_PHASES) - 1 and EVENT_PHASE.objects == 2
    one_object = (*WHERE_PHASES, RELATION_PHASE)
    assert all(p.curriculum_steps == p.steps for p in one_object) and all(p.curriculum_steps == 0 for p in STUDY_PHASES if p not in one_object)
    for again, before in ((RELATION_RETURN_PHASE, RETURN_PHASE), (RELATION_SETTLE_PHASE, SETTLE_PHASE)):   # the same seed, rate and length
        assert {**again.__dict__, "weights": None} == {**before.__dict__, "weights": None}
    for again, before in ((EVENT_RETURN_PHASE, RETURN_PHASE), (EVENT_SETTLE_PHASE, SETTLE_PHASE), (PAIR_RETURN_PHASE, RETURN_PHASE),
                          (PAIR_SETTLE_PHASE, SETTLE_PHASE), (replace(AUX_RETURN_PHASE, steps=RETURN_PHASE.steps), RETURN_PHASE),
                          (AUX_SETTLE_PHASE, SETTLE_PHASE), (COLOUR_SETTLE_PHASE, SETTLE_PHASE)):   # the same rate and length (the last return shorter), new seeds
        assert {**again.__dict__, "weights": None, "seed": None, "facts": 0.0, "wrong": 0.0} == {**before.__dict__, "weights": None, "seed": None}
    assert len({p.seed for p in STUDY_PHASES}) == len(STUDY_PHASES) - 2   # only the fifteenth and sixteenth reuse seeds


# state_sha256 of a short run whose later phase trains the tower too, on the ninth phase's task mix (hal_fine included)
SHORT_TOWER_SHA256 = "22e1a7e820e001754a652323fb96e0d01470f4edbc9ac2d8384686bf44d8a012"


def short_run_sha256(folder, phase: TrainConfig, **changes) -> str:
    "state_sha256 of a small model after two `exist` steps, then three of `phase` at batch 4 (with `changes`)."
    small = TinyLlavaConfig(image_size=32, patch_size=8, vision_width=32, vision_layers=1, text_width=32, text_layers=1, heads=2)
    later = TrainConfig(**{**phase.__dict__, "steps": 3, "batch_size": 4, "warmup": 1, "log_every": 1, **changes})
    phases = [TrainConfig(steps=2, batch_size=4, warmup=1, seed=0, weights={"exist": 1.0}, log_every=1), later]
    return train_shipped(folder, phases=phases, cfg=small, vision_steps=2, later=1, threads=(1, 1), log=lambda m: None)["state_sha256"]


def test_a_phase_that_trains_the_tower_reproduces_its_checksum(tmp_path):
    assert short_run_sha256(tmp_path/"tiny", FINE_PHASE) == SHORT_TOWER_SHA256
    frozen = short_run_sha256(tmp_path/"frozen", FINE_PHASE, vision_lr_scale=0.0)
    assert frozen != SHORT_TOWER_SHA256   # the tower's learning is part of what the checksum pins


# state_sha256 of a short run whose later phase is a one-object phase's recipe: the tenth (`where` alone), the fourteenth
# (caption checks wrong in the region alone, and `where`)
ONE_OBJECT_SHA256 = {"where": "05d68d8a5e7356a071db9ade5d411ea8a500c3a4d49e56ef09754f82b9cf2d8f",
                     "relation": "3c633e0cb8fff3414ce6e981089cb1a090673f21b2ce6465b8eeff75f03369a2"}


@pytest.mark.parametrize("name,phase", [("where", WHERE_PHASES[0]), ("relation", RELATION_PHASE)])
def test_a_one_object_phase_reproduces_its_checksum(tmp_path, name, phase):
    assert short_run_sha256(tmp_path/"tiny", phase, curriculum_steps=3) == ONE_OBJECT_SHA256[name]
    whole = short_run_sha256(tmp_path/"whole", phase, curriculum_steps=0)
    assert whole != ONE_OBJECT_SHA256[name]   # the one-object scenes are part of what the checksum pins


# state_sha256 of a short run on the seventeenth phase's recipe (caption checks wrong in an event alone, on two-object scenes)
TWO_OBJECT_SHA256 = "9b94624d5315322a09eb809bbf8407fec3972d28bab72510089d487f3e71b1d9"


def test_the_two_object_phase_reproduces_its_checksum(tmp_path):
    assert short_run_sha256(tmp_path/"tiny", EVENT_PHASE) == TWO_OBJECT_SHA256
    mixed = short_run_sha256(tmp_path/"mixed", EVENT_PHASE, objects=None)
    assert mixed != TWO_OBJECT_SHA256   # the two-object scenes are part of what the checksum pins


# state_sha256 of a short run on the twentieth phase's recipe (direct caption checks in same-scene true/false pairs, events)
EVENT_PAIRS_SHA256 = "1eb67779f6a4dbd72418a2e5db1beebc55f10d514eb05ebd1014bb06c8172b58"


def test_the_event_pair_phase_reproduces_its_checksum(tmp_path):
    assert short_run_sha256(tmp_path/"tiny", EVENT_PAIR_PHASE) == EVENT_PAIRS_SHA256
    single = short_run_sha256(tmp_path/"single", EVENT_PAIR_PHASE, weights={"hal_event": 1.0})
    assert single != EVENT_PAIRS_SHA256   # asking in pairs is part of what the checksum pins


# state_sha256 of a short run on the twenty-third phase's recipe (caption pairs by change, with the object-fact and
# 'wrong so far' auxiliary losses)
AUX_PAIRS_SHA256 = "cdf5e7ae1859a6679ce5b4bc9d7222767633cc036651016a06910d5408e90568"


def test_the_auxiliary_loss_phase_reproduces_its_checksum(tmp_path):
    assert short_run_sha256(tmp_path/"tiny", AUX_PAIR_PHASES[0]) == AUX_PAIRS_SHA256
    plain = short_run_sha256(tmp_path/"plain", AUX_PAIR_PHASES[0], facts=0.0, wrong=0.0)
    assert plain != AUX_PAIRS_SHA256   # the auxiliary losses are part of what the checksum pins
    facts_only = short_run_sha256(tmp_path/"facts", AUX_PAIR_PHASES[0], wrong=0.0)
    assert len({facts_only, plain, AUX_PAIRS_SHA256}) == 3   # and each of the two


# state_sha256 of a short run whose later phase is the thirty-first's recipe (the pairs again, with the pair-relation heads)
RELATION_PAIRS_SHA256 = "d377c7c83d527d0a191b25c5ecd10b52c6eb02fcd179d632f78d37f36f9dd526"

def test_the_pair_relation_phase_reproduces_its_checksum(tmp_path):
    assert short_run_sha256(tmp_path/"tiny", RELATION_PAIR_PHASES[0]) == RELATION_PAIRS_SHA256
    assert short_run_sha256(tmp_path/"plain", RELATION_PAIR_PHASES[0], relations=0.0) != RELATION_PAIRS_SHA256   # the heads are pinned
    off = short_run_sha256(tmp_path/"off", RELATION_PAIR_PHASES[0], relations=0.0, seed=AUX_PAIR_PHASES[0].seed)
    assert off == AUX_PAIRS_SHA256   # with the heads off and the twenty-third's seed it is the twenty-third phase
