#!/usr/bin/env python3
"""Derives other goldens of the tiny-model format from DeepSeek's golden, for the scope-2 tests of issue 9.

    derive_golden.py IN.json OUT.json OP [OP ...]

Every expected value of a derived golden is the reference's own: a capture is kept as stored, re-sampled at a
larger stride, or cut into per-token rows of a capture the reference stored in full (with the checksum of the rows
recomputed by the harness doc's formula, ck = sum_i float64(flat[i]) * (i+1)). Nothing here runs dsa. Operations,
applied in order:

  regimes=A,B,...   keep only these regimes (in this order) in fixture.regimes and in the file.
  steps             state fixture.steps, one {regime, start_pos, seqlen, input_ids_slice} per regime, as another
                    golden would (start_pos = tokens before it, slice [start_pos, start_pos + seqlen)).
  n-tokens=N        state fixture.n_tokens = N.
  shift-slice=R     fixture.steps' input_ids_slice of regime R shifted by one position (a golden that lies: the
                    replay must then feed other ids and fail input_ids).
  rename            rename the regimes step0, step1, ... (fixture.regimes, steps and the regime objects).
  restride=K        every capture re-stored at K times its stride (data[::K]; n and ck cover the whole tensor).
  prefill5          the window layer's steps re-cut: prefill5 (tokens 0..4) then seven decode steps decode5 ..
                    decode11, each holding the rows of prefill12's FULL captures that stay valid (input_ids, and
                    L0.{h_in, pre_mix_in, attn_in, attn_out, ffn_in, moe_indices, ffn_out}, L1.engram_in = L0's
                    output): layer 0 only reads its own window (attention-semantics.md section 4), which holds the
                    same rows whether the tokens came in one prefill or one at a time, and the harness around it is
                    per token. prefill_len becomes 5, so the ids reach past prefill_len + 2.
  e4m3-steps=R,C,K  capture C of regime R (an act_quant_fp8 output, e.g. L0.sa_kv) with its largest stored value
                    moved K steps of the e4m3 grid toward zero (at the block's power-of-two scale: a value
                    m * 2^e, m = 0.5 + k/16, steps by 2^(e-4), or 2^(e-5) below a power of two), ck updated: what a
                    reference that rounded that element the other way would store (K = 1: a quantisation boundary
                    flip; K = 2: not one).
  perturb=R,C,F,D   stored element at flat index F of capture C of regime R plus D (F a multiple of the stride;
                    D an integer for an integer capture, with a decimal point for a float one), ck updated: a golden that differs from the reference in one known element (for --force tests).
  no-engram         a model without engram layers (fixture.engram null, engram_layer_ids [], no engram weights, no
                    engram_hashes): only captures computed before the first engram layer (L1) stay valid, so the
                    golden keeps input_ids, embed and every L0 capture, plus L1.h_in = the reference's L1.engram_in
                    (the h that enters layer 1 when it has no engram) and L1.pre_mix_in.
"""
import json
import sys


def checksum(values):
    return sum(float(v) * (i + 1) for i, v in enumerate(values))


def regimes_of(g):
    return g["fixture"]["regimes"]


def op_regimes(g, names):
    for name in regimes_of(g):
        if name not in names:
            del g[name]
    for name in names:
        if name not in g:
            raise SystemExit("derive_golden: no regime " + name)
    g["fixture"]["regimes"] = list(names)
    g["fixture"].pop("steps", None)


def op_steps(g):
    steps, start = [], 0
    for name in regimes_of(g):
        s = g[name]["input_ids"]["shape"][1]
        steps.append({"regime": name, "start_pos": start, "seqlen": s, "input_ids_slice": [start, start + s]})
        start += s
    g["fixture"]["steps"] = steps


def op_shift_slice(g, name):
    for step in g["fixture"]["steps"]:
        if step["regime"] == name:
            step["input_ids_slice"] = [step["input_ids_slice"][0] + 1, step["input_ids_slice"][1] + 1]
            return
    raise SystemExit("derive_golden: shift-slice: no step for regime " + name)


def op_rename(g):
    names = regimes_of(g)
    new = ["step%d" % i for i in range(len(names))]
    for old, nn in zip(names, new):
        g[nn] = g.pop(old)
    for step in g["fixture"].get("steps", []):
        step["regime"] = new[names.index(step["regime"])]
    g["fixture"]["regimes"] = new


def op_restride(g, k):
    for name in regimes_of(g):
        for cap in g[name].values():
            cap["data"] = cap["data"][::k]
            cap["stride"] = cap["stride"] * k


def rows_capture(cap, begin, end):
    """Rows [begin, end) of a full capture of shape [1, s, ...] or [s, ...] (the token axis)."""
    if cap["stride"] != 1:
        raise SystemExit("derive_golden: a strided capture cannot be cut into rows")
    shape = cap["shape"]
    axis = 1 if len(shape) >= 2 and shape[0] == 1 else 0
    per_token = 1
    for d in shape[axis + 1:]:
        per_token *= d
    data = cap["data"][begin * per_token:end * per_token]
    new_shape = list(shape)
    new_shape[axis] = end - begin
    return {"shape": new_shape, "n": len(data), "stride": 1, "ck": checksum(data), "data": data}


PREFILL5_CAPTURES = ["input_ids", "L0.h_in", "L0.pre_mix_in", "L0.attn_in", "L0.attn_out", "L0.ffn_in",
                     "L0.moe_indices", "L0.ffn_out", "L1.engram_in"]


def op_prefill5(g):
    src = g["prefill12"]
    cut = [("prefill5", 0, 5)] + [("decode%d" % p, p, p + 1) for p in range(5, 12)]
    for name in regimes_of(g):
        del g[name]
    for name, begin, end in cut:
        g[name] = {c: rows_capture(src[c], begin, end) for c in PREFILL5_CAPTURES}
    g["fixture"]["regimes"] = [name for name, _, _ in cut]
    g["fixture"]["prefill_len"] = 5
    g["fixture"].pop("steps", None)


def op_e4m3_steps(g, regime, name, steps):
    import math
    cap = g[regime][name]
    j = max(range(len(cap["data"])), key=lambda i: abs(cap["data"][i]))
    v = cap["data"][j]
    w = v
    for _ in range(steps):
        m, e = math.frexp(abs(w))
        step = 2.0 ** (e - 5) if m == 0.5 else 2.0 ** (e - 4)
        w = math.copysign(abs(w) - step, w)
    cap["data"][j] = w
    cap["ck"] += (w - v) * (j * cap["stride"] + 1)


def op_perturb(g, regime, name, flat, delta):
    cap = g[regime][name]
    if flat % cap["stride"] != 0:
        raise SystemExit("derive_golden: perturb: flat %d is not stored (stride %d)" % (flat, cap["stride"]))
    cap["data"][flat // cap["stride"]] += delta
    cap["ck"] += delta * (flat + 1)


def op_no_engram(g):
    f = g["fixture"]
    f["engram"] = None
    f["engram_layer_ids"] = []
    f["engram_num_embeddings"] = []
    g["weights_meta"] = {k: v for k, v in g["weights_meta"].items() if ".engram." not in k}
    for name in regimes_of(g):
        reg = g[name]
        kept = {}
        for c, cap in reg.items():
            if c in ("input_ids", "embed") or c.startswith("L0."):
                kept[c] = cap
            elif c == "L1.engram_in":
                kept["L1.h_in"] = cap
            elif c == "L1.pre_mix_in":
                kept[c] = cap
        g[name] = kept


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    with open(argv[1]) as f:
        g = json.load(f)
    for op in argv[3:]:
        key, _, value = op.partition("=")
        if key == "regimes":
            op_regimes(g, value.split(","))
        elif key == "steps":
            op_steps(g)
        elif key == "n-tokens":
            g["fixture"]["n_tokens"] = int(value)
        elif key == "shift-slice":
            op_shift_slice(g, value)
        elif key == "rename":
            op_rename(g)
        elif key == "restride":
            op_restride(g, int(value))
        elif key == "prefill5":
            op_prefill5(g)
        elif key == "e4m3-steps":
            regime, name, k = value.split(",")
            op_e4m3_steps(g, regime, name, int(k))
        elif key == "perturb":
            regime, name, flat, delta = value.split(",")
            op_perturb(g, regime, name, int(flat), float(delta) if "." in delta else int(delta))
        elif key == "no-engram":
            op_no_engram(g)
        else:
            raise SystemExit("derive_golden: unknown operation " + op)
    with open(argv[2], "w") as f:
        json.dump(g, f)


if __name__ == "__main__":
    main(sys.argv)
