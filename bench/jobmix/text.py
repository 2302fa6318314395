"""text.py - a transformers job for bench/jobmix.sh: GPT-2 or BERT built
from a config (random weights, nothing downloaded), training or inference
on random tokens.

    python3 text.py --name N --model gpt2 --size medium --mode train \
        --batch 4 --seq 1024 --iters 40

Sizes: gpt2 small (12 layers, 768), medium (24, 1024), large (36, 1280);
bert base (12, 768), large (24, 1024).  Training: causal LM loss (gpt2) or
masked-LM loss on every token (bert), bf16 autocast, AdamW.  Inference:
a forward pass under inference_mode.  Output: see common.py.
"""
import common

SIZES = {
    "gpt2": {"small": (12, 768, 12), "medium": (24, 1024, 16),
             "large": (36, 1280, 20)},
    "bert": {"base": (12, 768, 12), "large": (24, 1024, 16)},
}


def main():
    p = common.parser(__doc__)
    p.add_argument("--model", choices=sorted(SIZES), required=True)
    p.add_argument("--size", required=True)
    p.add_argument("--mode", choices=("train", "infer"), required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    a = p.parse_args()
    if a.size not in SIZES[a.model]:
        p.error(f"--size for {a.model}: one of {', '.join(SIZES[a.model])}")
    layers, hidden, heads = SIZES[a.model][a.size]

    import torch
    import transformers as tf

    dev = torch.device("cuda")

    def build():
        if a.model == "gpt2":
            cfg = tf.GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads,
                                n_positions=max(1024, a.seq))
            m = tf.GPT2LMHeadModel(cfg)
        else:
            cfg = tf.BertConfig(num_hidden_layers=layers, hidden_size=hidden,
                                num_attention_heads=heads,
                                intermediate_size=4 * hidden,
                                max_position_embeddings=max(512, a.seq))
            m = tf.BertForMaskedLM(cfg)
        m = m.to(dev)
        pool = torch.randint(0, cfg.vocab_size, (8, a.batch, a.seq), device=dev)
        if a.mode == "train":
            m.train()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
        else:
            m.eval()
            opt = None
        return m, opt, pool

    def step(state, i):
        m, opt, pool = state
        x = pool[i % pool.shape[0]]
        if opt is None:
            with torch.inference_mode(), torch.autocast("cuda", torch.bfloat16):
                m(input_ids=x)
            return
        with torch.autocast("cuda", torch.bfloat16):
            loss = m(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run(a.name, a.iters, build, step)


if __name__ == "__main__":
    main()
