"""A tiny random Stable Diffusion pipeline (UNet, VAE, CLIP text encoder and a byte-level CLIP tokenizer), built
offline from configs and saved with `save_pretrained`, for testing the text-to-image generation path without weights."""
from pathlib import Path


def clip_tokenizer():
    "A CLIP tokenizer whose vocabulary is the byte alphabet (each also as a word end) and no merges: every text encodes."
    from tokenizers import pre_tokenizers
    from transformers import CLIPTokenizer
    chars = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {t: i for i, t in enumerate([*chars, *(c + "</w>" for c in chars), "<|startoftext|>", "<|endoftext|>"])}
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def make_tiny_pipeline(folder: Path, seed: int = 0) -> Path:
    "Save a tiny random StableDiffusionPipeline (32x32 images, a few channels) to `folder`; return it."
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel
    torch.manual_seed(seed)
    tok = clip_tokenizer()
    unet = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
                                cross_attention_dim=16, norm_num_groups=4, attention_head_dim=2)
    vae = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 3,
                        up_block_types=("UpDecoderBlock2D",) * 3, block_out_channels=(4, 8, 8), latent_channels=4,
                        norm_num_groups=4, layers_per_block=1, sample_size=32)
    text = CLIPTextModel(CLIPTextConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, max_position_embeddings=77, bos_token_id=len(tok) - 2,
                                        eos_token_id=len(tok) - 1, pad_token_id=len(tok) - 1))
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet, scheduler=DDIMScheduler(steps_offset=1, clip_sample=False),
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return Path(folder)


if __name__ == "__main__":
    import sys
    print(make_tiny_pipeline(Path(sys.argv[1])))
