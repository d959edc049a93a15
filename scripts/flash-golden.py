#!/usr/bin/env python3
"""Writes a golden FILE of the tiny-model format at V4.1-Flash ATTENTION geometry, for a scale run of dsa-run --golden
(issue 9 scope 4): does the replay fit a 2-core machine's memory and time at production attention sizes?

    python3 scripts/flash-golden.py OUT.json [--prefill N] [--decodes K] [--layers window|both]

The attention layers have V4.1-Flash's sizes (attention-semantics.md section 1: dim 5120, 64 heads of 512, rope 64,
q_lora 1280, o_groups 8 x o_lora 1024, window 128; with --layers both a second, ratio-2 kv + index source layer with
V4.1-Flash's indexer, 32 heads of 128, top-512). The model around them is small (vocab 64, 2 routed experts of width
64 and one shared, hc 4, no engram layer): the harness is test scaffolding, the attention is what the project
compiles. There is no reference run at this geometry, so the golden holds no expected tensor but the input ids
(the rule of tiny-model-harness.md): the replay compares those and runs everything else, which is what a scale run
measures. Every weight's ck is computed here from the filler rule of tiny-model-harness.md (an independent Python
implementation; two processes, a few minutes), so dsa-run's weight check still pins its filler.
"""
import argparse
import json
import math
import struct
import sys
from multiprocessing import Pool

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for c in text.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def splitmix64(z):
    z = (z + GAMMA) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def weight_ck(args):
    """ck = sum_i v_i * (i+1) of filler(name, n, scale, offset) rounded to dtype (bfloat16 RNE or float32)."""
    name, n, scale, offset, dtype = args
    salt = fnv1a64(name)
    pack, unpack = struct.pack, struct.unpack
    ck = 0.0
    for i in range(n):
        z = splitmix64(salt ^ ((i * GAMMA) & M64))
        u = (z >> 40) / 16777216.0
        b = unpack("<I", pack("<f", (2.0 * u - 1.0) * scale + offset))[0]
        if dtype == "bfloat16":
            b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
        ck += unpack("<f", pack("<I", b))[0] * (i + 1)
    return ck


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--prefill", type=int, default=256)
    ap.add_argument("--decodes", type=int, default=2)
    ap.add_argument("--layers", choices=["window", "both"], default="window")
    a = ap.parse_args()

    dim, heads, hd, rd, qr, groups, orank, window = 5120, 64, 512, 64, 1280, 8, 1024, 128
    ih, ihd, topk = 32, 128, 512
    vocab, experts, inter, hc = 64, 2, 64, 4
    ratios = [0] if a.layers == "window" else [0, 2]
    n_layers = len(ratios)
    kv_sources = [l for l, r in enumerate(ratios) if r > 0]
    total = a.prefill + a.decodes
    max_seq = 1 << max(8, (total - 1).bit_length())

    weights = {}

    def w(name, shape, dtype="bfloat16", scale=None, offset=0.0):
        if scale is None:
            scale = 1.0 / math.sqrt(shape[-1])
        weights[name] = {"shape": shape, "n": math.prod(shape), "scale": scale, "offset": offset, "kind": "f32",
                         "dtype": dtype}

    def norm(name, n):
        w(name, [n], scale=0.05, offset=1.0)

    w("embed.weight", [vocab, dim], scale=0.5)
    norm("norm.weight", dim)
    w("head.weight", [vocab, dim], dtype="float32")
    for l, r in enumerate(ratios):
        p = "layers.%d." % l
        for part in ("attn", "ffn"):
            w(p + "hc_%s_fn" % part, [(2 + hc) * hc, hc * dim], dtype="float32")
            w(p + "hc_%s_base" % part, [(2 + hc) * hc], dtype="float32", scale=0.1)
            w(p + "hc_%s_scale" % part, [3], dtype="float32", scale=0.05, offset=1.0)
        norm(p + "attn_norm.weight", dim)
        norm(p + "ffn_norm.weight", dim)
        w(p + "attn.attn_sink", [heads], dtype="float32", scale=0.1)
        w(p + "attn.wq_a.weight", [qr, dim])
        norm(p + "attn.q_norm.weight", qr)
        w(p + "attn.wq_b.weight", [heads * hd, qr])
        w(p + "attn.wkv.weight", [hd, dim])
        norm(p + "attn.kv_norm.weight", hd)
        w(p + "attn.wo_a.weight", [groups * orank, heads * hd // groups])
        w(p + "attn.wo_b.weight", [dim, groups * orank])
        if r > 0:
            w(p + "attn.compressor.wkv.weight", [hd, dim], dtype="float32")
            if r >= 2:
                w(p + "attn.compressor.wgate.weight", [hd, dim], dtype="float32")
            norm(p + "attn.compressor.norm.weight", hd)
            w(p + "attn.indexer.wk.weight", [ihd, hd])
            norm(p + "attn.indexer.k_norm.weight", ihd)
            w(p + "attn.indexer.wq_b.weight", [ih * ihd, qr])
            w(p + "attn.indexer.weights_proj.weight", [ih, dim])
        w(p + "ffn.gate.weight", [experts, dim])
        w(p + "ffn.gate.bias", [experts], dtype="float32", scale=0.05)
        for e in list(range(experts)) + ["shared"]:
            q = p + ("ffn.shared_experts." if e == "shared" else "ffn.experts.%d." % e)
            w(q + "w1.weight", [inter, dim])
            w(q + "w2.weight", [dim, inter])
            w(q + "w3.weight", [inter, dim])

    names = sorted(weights, key=lambda k: -weights[k]["n"])  # the big ones first: even load on the two processes
    total_n = sum(v["n"] for v in weights.values())
    print("flash-golden: %d weights, %.1fM elements: computing their ck (2 processes)" % (len(names), total_n / 1e6),
          file=sys.stderr, flush=True)
    with Pool(2) as pool:
        jobs = [(k, weights[k]["n"], weights[k]["scale"], weights[k]["offset"], weights[k]["dtype"]) for k in names]
        for k, ck in zip(names, pool.imap(weight_ck, jobs)):
            weights[k]["ck"] = ck
            if weights[k]["n"] > 10 ** 6:
                print("flash-golden: %s (%.1fM) done" % (k, weights[k]["n"] / 1e6), file=sys.stderr, flush=True)

    tiny_rule = "fixed_ints('input_ids', batch*n_tokens, vocab_size)[b*n_tokens+t]"
    ids = [splitmix64(fnv1a64("input_ids") ^ ((t * GAMMA) & M64)) % vocab for t in range(total)]
    probe = [splitmix64(fnv1a64("probe") ^ ((i * GAMMA) & M64)) for i in range(8)]
    regimes = ["prefill%d" % a.prefill] + ["decode%d" % p for p in range(a.prefill, total)]
    fixture = {
        "vocab_size": vocab, "dim": dim, "n_layers": n_layers, "n_heads": heads, "head_dim": hd,
        "rope_head_dim": rd, "q_lora_rank": qr, "o_lora_rank": orank, "o_groups": groups,
        "moe_inter_dim": inter, "n_routed_experts": experts, "n_shared_experts": 1, "n_activated_experts": 1,
        "score_func": "sqrtsoftplus", "route_scale": 1.5, "norm_topk_prob": True, "swiglu_limit": 10.0,
        "window_size": window, "compress_ratios": ratios, "kv_source_layers": kv_sources,
        "index_source_layers": kv_sources, "candidate_source_layer": -1, "candidate_topk_blocks": 2048,
        "candidate_block_size": 8, "index_n_heads": ih, "index_head_dim": ihd, "index_topk": topk,
        "hc_mult": hc, "hc_sinkhorn_iters": 20, "hc_eps": 1e-06, "engram": None, "engram_layer_ids": [],
        "rope_theta": 10000.0, "compress_rope_theta": 160000.0, "rope_factor": 16.0, "original_seq_len": 65536,
        "beta_fast": 32, "beta_slow": 1, "norm_eps": 1e-20, "gate_temp": 1.0, "vision_n_layers": 0, "dtype": "bf16",
        "expert_dtype": None, "n_mtp_layers": 0, "dspark_block_size": 0, "max_batch_size": 1, "max_seq_len": max_seq,
        "temperature": 0.0, "batch": 1, "prefill_len": a.prefill, "n_tokens": total, "regimes": regimes,
        "reference": "none: a scale run (scripts/flash-golden.py), only input_ids are expected",
        "input_ids_rule": tiny_rule, "lcg_probe": probe,
    }
    golden = {"fixture": fixture, "weights_meta": {k: weights[k] for k in weights}}
    start = 0
    for name in regimes:
        s = a.prefill if name.startswith("prefill") else 1
        data = ids[start:start + s]
        golden[name] = {"input_ids": {"shape": [1, s], "n": s, "stride": 1,
                                      "ck": float(sum(v * (i + 1) for i, v in enumerate(data))), "data": data}}
        start += s
    with open(a.out, "w") as f:
        json.dump(golden, f)
    print("flash-golden: wrote %s (%d regimes)" % (a.out, len(regimes)), file=sys.stderr)


if __name__ == "__main__":
    main()
