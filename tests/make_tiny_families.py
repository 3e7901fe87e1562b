"""Tiny randomly initialised models of the VLM families researchers evaluate, saved in the hub layout with no network.

Each family gets its real architecture (a tiny config), a byte-level tokenizer that holds the family's special tokens
at the ids its config names, its image processor (the PIL backend, so torchvision is not needed), and a short chat
template written here in that family's real turn format (PaliGemma, as published, has none). Use:

    python tests/make_tiny_families.py OUT_DIR [FAMILY ...]      # or make_tiny_family(name, folder) from Python
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

SEED = 0
INIT_RANGE = 0.2   # 10x the usual: answers then depend on positions and pictures, so batching errors show in them

# --- tokenizer -----------------------------------------------------------------------------------------------------

def byte_tokenizer(specials: list[str], # special tokens, given ids 256, 257, ... in this order
                   bos: str | None, eos: str, pad: str,
                   add_bos: bool, # whether tokenizing prepends `bos` (as Llama, Gemma and Mistral tokenizers do)
                   extra: dict[str, str] | None = None, # named special tokens, e.g. {"image_token": "<image>"}
                   unk: str | None = None):
    "A byte-level BPE tokenizer with no merges (every text encodes, ids 0-255 are bytes) and the family's special tokens."
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(byte_chars))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    if add_bos:
        bos_id = tok.token_to_id(bos)
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                           special_tokens=[(bos, bos_id)])
    kw = dict(bos_token=bos, eos_token=eos, pad_token=pad, unk_token=unk, extra_special_tokens=dict(extra or {}))
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=4096, **{k: v for k, v in kw.items() if v is not None})

def vocab_size(tok) -> int:
    "Embedding rows for `tok`: its length rounded up to a multiple of 64."
    return -(-len(tok) // 64) * 64

# --- small configs ---------------------------------------------------------------------------------------------------

def llama_text(tok, **kw) -> dict:
    "A two-layer Llama-style decoder config for `tok`, initialised with weights large enough to make attention matter."
    return dict(vocab_size=vocab_size(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=512, bos_token_id=tok.bos_token_id,
                eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, initializer_range=INIT_RANGE, **kw)

def siglip_vision(image_size: int, patch_size: int) -> dict:
    return dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                image_size=image_size, patch_size=patch_size)

def clip_vision(image_size: int, patch_size: int) -> dict:
    return dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, projection_dim=32,
                image_size=image_size, patch_size=patch_size)

# --- chat templates (each written here in its family's real turn format) ---------------------------------------------

def _content(image: str, text: str = "{{ c['text'] }}") -> str:
    "Jinja that renders a message's parts in order: `image` for an image part, `text` for a text part."
    return ("{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
            f"{{% if c['type'] == 'image' %}}{image}{{% else %}}{text}{{% endif %}}{{% endfor %}}{{% endif %}}")

CHATML_QWEN_VL = ("{% for m in messages %}{% if loop.first and m['role'] != 'system' %}<|im_start|>system\nYou are a helpful "
                  "assistant.<|im_end|>\n{% endif %}<|im_start|>{{ m['role'] }}\n"
                  + _content("<|vision_start|><|image_pad|><|vision_end|>") + "<|im_end|>\n{% endfor %}"
                  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
CHATML_ONEVISION = ("{% for m in messages %}<|im_start|>{{ m['role'] }} " + _content("<image>\n") + "<|im_end|>\n"
                    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
CHATML_INTERNVL = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n" + _content("<IMG_CONTEXT>\n") + "<|im_end|>\n"
                   "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
IDEFICS3 = ("<|begin_of_text|>{% for m in messages %}{{ m['role'] | capitalize }}{% if m['content'][0]['type'] == 'image' %}:"
            "{% else %}: {% endif %}" + _content("<image>") + "<end_of_utterance>\n{% endfor %}"
            "{% if add_generation_prompt %}Assistant:{% endif %}")
SMOLVLM = ("<|im_start|>{% for m in messages %}{{ m['role'] | capitalize }}{% if m['content'][0]['type'] == 'image' %}:"
           "{% else %}: {% endif %}" + _content("<image>") + "<end_of_utterance>\n{% endfor %}"
           "{% if add_generation_prompt %}Assistant:{% endif %}")
GEMMA3 = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
          + _content("<start_of_image>", "{{ c['text'] | trim }}") + "<end_of_turn>\n{% endfor %}"
          "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
MLLAMA = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
          + _content("<|image|>", "{{ c['text'] | trim }}") + "<|eot_id|>{% endfor %}"
          "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
LLAVA_15 = ("{% for m in messages %}{% if m['role'] != 'system' %}{{ m['role'].upper() + ': ' }}{% endif %}"
            + _content("<image>\n", "{{ c['text'] + ' ' }}") + "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}")
LLAVA_NEXT_MISTRAL = ("{% for m in messages %}{% if m['role'] == 'user' %}[INST] {% endif %}"
                      + _content("<image>\n", "{{ c['text'] }}") + "{% if m['role'] == 'user' %} [/INST]{% else %}</s>"
                      "{% endif %}{% endfor %}")

# --- the families ---------------------------------------------------------------------------------------------------

def _save(folder: Path, model, processor, video_processor: str | None = None) -> Path:
    "Save in the hub layout; `video_processor` names the family's video processor class, whose settings file is written too."
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    if video_processor:   # as published; building the class itself needs torchvision
        settings = {"video_processor_type": video_processor, "processor_class": type(processor).__name__}
        (folder/"video_preprocessor_config.json").write_text(json.dumps(settings, indent=2))
    return folder

def _seeded(config_cls, model_cls, **config):
    import torch
    torch.manual_seed(SEED)
    cfg = config_cls(**config)
    return model_cls(cfg).eval()

def qwen2_vl(folder: Path, qwen25: bool = False) -> Path:
    import transformers as T
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                "<|video_pad|>"]
    tok = byte_tokenizer(specials, None, "<|im_end|>", "<|endoftext|>", add_bos=False,
                         extra={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"})
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    text = llama_text(tok, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]})
    text.update(bos_token_id=ids["<|endoftext|>"])
    if qwen25:
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2, window_size=56, fullatt_block_indexes=[1])
        cfg_cls, model_cls, proc_cls = T.Qwen2_5_VLConfig, T.Qwen2_5_VLForConditionalGeneration, T.Qwen2_5_VLProcessor
    else:
        vision = dict(depth=2, embed_dim=32, hidden_size=32, num_heads=4, mlp_ratio=2, patch_size=14, spatial_merge_size=2,
                      temporal_patch_size=2)
        cfg_cls, model_cls, proc_cls = T.Qwen2VLConfig, T.Qwen2VLForConditionalGeneration, T.Qwen2VLProcessor
    model = _seeded(cfg_cls, model_cls, text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                    video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                    vision_end_token_id=ids["<|vision_end|>"])
    image_processor = Qwen2VLImageProcessorPil(size={"shortest_edge": 56 * 56, "longest_edge": 84 * 84}, patch_size=14,
                                               merge_size=2, temporal_patch_size=2)
    proc = _image_only(proc_cls)(image_processor=image_processor, tokenizer=tok, chat_template=CHATML_QWEN_VL)
    return _save(folder, model, proc, "Qwen2VLVideoProcessor")

def _image_only(proc_cls):
    "`proc_cls` without its video processor (which needs torchvision), as mmresearch.models builds it."
    from mmresearch.models import image_only_processor_class
    return image_only_processor_class(proc_cls)

def qwen2_5_vl(folder: Path) -> Path: return qwen2_vl(folder, qwen25=True)

def llava_onevision(folder: Path) -> Path:
    import transformers as T
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import LlavaOnevisionImageProcessorPil
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"]
    tok = byte_tokenizer(specials, None, "<|im_end|>", "<|endoftext|>", add_bos=False,
                         extra={"image_token": "<image>", "video_token": "<video>"})
    pinpoints = [[28, 28], [28, 56], [56, 28], [56, 56]]
    model = _seeded(T.LlavaOnevisionConfig, T.LlavaOnevisionForConditionalGeneration,
                    text_config={"model_type": "qwen2", **llama_text(tok)}, vision_config=siglip_vision(28, 14),
                    image_token_index=tok.convert_tokens_to_ids("<image>"), video_token_index=tok.convert_tokens_to_ids("<video>"),
                    image_grid_pinpoints=pinpoints, vision_feature_layer=-1)
    image_processor = LlavaOnevisionImageProcessorPil(size={"height": 28, "width": 28}, image_grid_pinpoints=pinpoints)
    proc = _image_only(T.LlavaOnevisionProcessor)(image_processor=image_processor, tokenizer=tok, chat_template=CHATML_ONEVISION,
                                                  num_image_tokens=4, vision_feature_select_strategy="full",
                                                  vision_aspect_ratio="anyres_max_9")
    return _save(folder, model, proc, "LlavaOnevisionVideoProcessor")

def internvl(folder: Path) -> Path:
    import transformers as T
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>"]
    tok = byte_tokenizer(specials, None, "<|im_end|>", "<|endoftext|>", add_bos=False,
                         extra={"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                                "video_token": "<video>"})
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, image_size=[56, 56],
                  patch_size=[14, 14])
    model = _seeded(T.InternVLConfig, T.InternVLForConditionalGeneration, text_config={"model_type": "qwen2", **llama_text(tok)},
                    vision_config=vision, image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"), image_seq_length=4,
                    downsample_ratio=0.5)
    image_processor = GotOcr2ImageProcessorPil(size={"height": 56, "width": 56}, crop_to_patches=False)
    proc = _image_only(T.InternVLProcessor)(image_processor=image_processor, tokenizer=tok, chat_template=CHATML_INTERNVL,
                                            image_seq_length=4)
    return _save(folder, model, proc, "InternVLVideoProcessor")

def _idefics_tokenizer(bos: str, eos: str):
    rows = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    specials = [bos, eos, "<|im_start|>", "<|im_end|>", "<|finetune_pad|>", "<fake_token_around_image>", "<image>",
                "<end_of_utterance>", "<global-img>", "<video>", *rows]
    return byte_tokenizer(list(dict.fromkeys(specials)), bos, eos, "<|finetune_pad|>", add_bos=bos == "<|begin_of_text|>",
                          extra={"image_token": "<image>", "fake_image_token": "<fake_token_around_image>",
                                 "global_image_token": "<global-img>", "end_of_utterance_token": "<end_of_utterance>"})

def _idefics_family(folder: Path, config_cls, model_cls, processor_cls, image_processor_cls, bos: str, eos: str,
                    template: str, *video: str) -> Path:
    "Idefics3 and SmolVLM share one layout: a Llama decoder, a SigLIP tower, pixel shuffle and image-row tokens."
    tok = _idefics_tokenizer(bos, eos)
    model = _seeded(config_cls, model_cls, text_config={"model_type": "llama", **llama_text(tok)},
                    vision_config=siglip_vision(32, 8), image_token_id=tok.convert_tokens_to_ids("<image>"), scale_factor=2)
    image_processor = image_processor_cls(size={"longest_edge": 32}, max_image_size={"longest_edge": 32},
                                          do_image_splitting=False)
    proc = processor_cls(image_processor=image_processor, tokenizer=tok, chat_template=template, image_seq_len=4)
    return _save(folder, model, proc, *video)

def idefics3(folder: Path) -> Path:
    import transformers as T
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil
    return _idefics_family(folder, T.Idefics3Config, T.Idefics3ForConditionalGeneration, T.Idefics3Processor,
                           Idefics3ImageProcessorPil, "<|begin_of_text|>", "<|end_of_text|>", IDEFICS3)

def smolvlm2(folder: Path) -> Path:
    import transformers as T
    from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil
    return _idefics_family(folder, T.SmolVLMConfig, T.SmolVLMForConditionalGeneration, _image_only(T.SmolVLMProcessor),
                           SmolVLMImageProcessorPil, "<|im_start|>", "<end_of_utterance>", SMOLVLM, "SmolVLMVideoProcessor")

def gemma3(folder: Path) -> Path:
    import transformers as T
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>",
                "<image_soft_token>"]
    tok = byte_tokenizer(specials, "<bos>", "<eos>", "<pad>", add_bos=True, unk="<unk>",
                         extra={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"})
    # untied output layer: with Gemma's scaled embeddings, a random tied one just repeats the prompt's last token
    text = llama_text(tok, head_dim=8, query_pre_attn_scalar=8, sliding_window=64, layer_types=["sliding_attention", "full_attention"],
                      tie_word_embeddings=False)
    model = _seeded(T.Gemma3Config, T.Gemma3ForConditionalGeneration, text_config=text, vision_config=siglip_vision(32, 8),
                    mm_tokens_per_image=4, boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
                    eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
                    image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
                    eos_token_id=[tok.eos_token_id, tok.convert_tokens_to_ids("<end_of_turn>")], tie_word_embeddings=False)
    image_processor = Gemma3ImageProcessorPil(size={"height": 32, "width": 32})
    proc = T.Gemma3Processor(image_processor=image_processor, tokenizer=tok, chat_template=GEMMA3, image_seq_length=4)
    return _save(folder, model, proc)

def paligemma(folder: Path) -> Path:
    "PaliGemma as published: no chat template; its processor writes the prompt (image tokens, BOS, text, newline)."
    import transformers as T
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<image>"]
    tok = byte_tokenizer(specials, "<bos>", "<eos>", "<pad>", add_bos=True, unk="<unk>", extra={"image_token": "<image>"})
    text = dict(llama_text(tok, head_dim=8, tie_word_embeddings=False), model_type="gemma")   # untied: see gemma3
    model = _seeded(T.PaliGemmaConfig, T.PaliGemmaForConditionalGeneration, text_config=text, vision_config=siglip_vision(32, 8),
                    image_token_index=tok.convert_tokens_to_ids("<image>"), projection_dim=32, hidden_size=32,
                    tie_word_embeddings=False)
    image_processor = SiglipImageProcessorPil(size={"height": 32, "width": 32})
    image_processor.image_seq_length = 16
    proc = T.PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    return _save(folder, model, proc)

def mllama(folder: Path) -> Path:
    import transformers as T
    from transformers.models.mllama.image_processing_pil_mllama import MllamaImageProcessorPil
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                "<|finetune_right_pad_id|>", "<|python_tag|>", "<|image|>"]
    tok = byte_tokenizer(specials, "<|begin_of_text|>", "<|eot_id|>", "<|finetune_right_pad_id|>", add_bos=True,
                         extra={"image_token": "<|image|>"})
    text = llama_text(tok, cross_attention_layers=[1])
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_global_layers=1, attention_heads=4,
                  vision_output_dim=64, image_size=28, patch_size=14, max_num_tiles=2, intermediate_layers_indices=[0],
                  supported_aspect_ratios=[[1, 1], [1, 2], [2, 1]])
    model = _seeded(T.MllamaConfig, T.MllamaForConditionalGeneration, text_config=text, vision_config=vision,
                    image_token_index=tok.convert_tokens_to_ids("<|image|>"))
    image_processor = MllamaImageProcessorPil(size={"height": 28, "width": 28}, max_image_tiles=2)
    proc = T.MllamaProcessor(image_processor=image_processor, tokenizer=tok, chat_template=MLLAMA)
    return _save(folder, model, proc)

def _llava_tokenizer():
    return byte_tokenizer(["<unk>", "<s>", "</s>", "<image>", "<pad>"], "<s>", "</s>", "<pad>", add_bos=True, unk="<unk>",
                          extra={"image_token": "<image>"})

def llava_15(folder: Path) -> Path:
    import transformers as T
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil
    tok = _llava_tokenizer()
    model = _seeded(T.LlavaConfig, T.LlavaForConditionalGeneration, text_config={"model_type": "llama", **llama_text(tok)},
                    vision_config=clip_vision(28, 14), image_token_index=tok.convert_tokens_to_ids("<image>"),
                    vision_feature_layer=-2, image_seq_length=4)
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    proc = T.LlavaProcessor(image_processor=image_processor, tokenizer=tok, chat_template=LLAVA_15, patch_size=14,
                            vision_feature_select_strategy="default", num_additional_image_tokens=1)
    return _save(folder, model, proc)

def llava_next(folder: Path) -> Path:
    import transformers as T
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil
    tok = _llava_tokenizer()
    pinpoints = [[28, 56], [56, 28], [56, 56]]
    model = _seeded(T.LlavaNextConfig, T.LlavaNextForConditionalGeneration, text_config={"model_type": "mistral", **llama_text(tok)},
                    vision_config=clip_vision(28, 14), image_token_index=tok.convert_tokens_to_ids("<image>"),
                    image_grid_pinpoints=pinpoints, vision_feature_layer=-2, image_seq_length=4)
    image_processor = LlavaNextImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28},
                                                 image_grid_pinpoints=pinpoints)
    proc = T.LlavaNextProcessor(image_processor=image_processor, tokenizer=tok, chat_template=LLAVA_NEXT_MISTRAL, patch_size=14,
                                vision_feature_select_strategy="default", num_additional_image_tokens=1)
    return _save(folder, model, proc)

FAMILIES: dict[str, Callable[[Path], Path]] = {
    "qwen2_vl": qwen2_vl, "qwen2_5_vl": qwen2_5_vl, "llava_onevision": llava_onevision, "internvl": internvl,
    "idefics3": idefics3, "smolvlm2": smolvlm2, "gemma3": gemma3, "paligemma": paligemma, "mllama": mllama,
    "llava_15": llava_15, "llava_next": llava_next,
}

def make_tiny_family(name: str, # a key of `FAMILIES`
                     folder: Path | str) -> Path:
    "Write a tiny random model of family `name` into `folder` (hub layout) and return the folder."
    if name not in FAMILIES: raise KeyError(f"unknown family {name!r}; choose one of {sorted(FAMILIES)}")
    return FAMILIES[name](Path(folder))

if __name__ == "__main__":
    out, names = Path(sys.argv[1]), sys.argv[2:] or list(FAMILIES)
    for n in names: print(n, make_tiny_family(n, out/n))
