#!/usr/bin/env python3
"""The bad-input matrix of issue 12 (docs/robustness.md): mutated goldens run through the built tools.

    bad_input_matrix.py GOLDEN OUTDIR LIBRARIES [TIMEOUT_S]

Writes one mutated copy of GOLDEN per class below into OUTDIR, runs each on the tools the class lists, with a
timeout, and prints one line per run:

    CLASS TOOL: status S: MESSAGE

S is the exit status, `signal N` when the tool died of a signal, or `timeout` when it ran past TIMEOUT_S (default
120 s: a hang); MESSAGE is the tool's first `error:` line (else its last line of output). The test (FileCheck)
asserts the status (1 or 2) and that the message names the bad field. Tools:
  dsa-run      dsa-run --golden FILE --layers 0                  (the reference interpreter)
  dsa-run-cpu  dsa-run --golden FILE --backend=cpu               (JIT-compiled from the golden itself)
  dsa-golden   dsa-golden --golden FILE --libraries LIBRARIES    (the step libraries emitted from GOLDEN unchanged)
Reader classes run on all three; the `compiled-for` classes (a golden the reader accepts, but whose configuration
is not what the step libraries were compiled for) on dsa-golden, the one tool that runs libraries built elsewhere.
Nothing here changes the golden's checksums: the checks must catch the values before they are used.
"""
import json
import os
import subprocess
import sys

READER = ("dsa-run", "dsa-run-cpu", "dsa-golden")
LIBRARIES = ("dsa-golden",)


def fixture(key, value):
    def mutate(g):
        g["fixture"][key] = value
    return mutate


def weight(name, **fields):
    def mutate(g):
        g["weights_meta"][name].update(fields)
    return mutate


def capture(regime, name, **fields):
    def mutate(g):
        g[regime][name].update(fields)
    return mutate


def ratio(layer, value):
    def mutate(g):
        g["fixture"]["compress_ratios"][layer] = value
    return mutate


def ratios(values):
    def mutate(g):
        g["fixture"]["compress_ratios"] = values
    return mutate


# (class, tools, mutation of the parsed golden or a text edit ("text", old, new) of its JSON dump[, environment])
CLASSES = [
    ("window-size-negative", READER, fixture("window_size", -1)),
    ("window-size-zero", READER, fixture("window_size", 0)),
    ("max-seq-len-negative", READER, fixture("max_seq_len", -1)),
    ("max-seq-len-1e12", READER, fixture("max_seq_len", 10 ** 12)),
    ("max-seq-len-1e12-float", READER, fixture("max_seq_len", 1e12)),
    ("head-dim-2^40", READER, fixture("head_dim", 2 ** 40)),
    ("dim-2^62", READER, fixture("dim", 2 ** 62)),
    ("n-heads-2^62", READER, fixture("n_heads", 2 ** 62)),
    ("o-lora-rank-2^62", READER, fixture("o_lora_rank", 2 ** 62)),
    ("index-head-dim-2^40", READER, fixture("index_head_dim", 2 ** 40)),
    ("compress-ratio-2^40", READER, ratio(2, 2 ** 40)),
    ("ring-above-byte-limit", READER, lambda g: g["fixture"].update(window_size=2 ** 20, head_dim=2 ** 14)),
    # Each size within its bound and the reader's products, a kv source's compressor state [r, head_dim] (8 MB)
    # above a 4 MB byte limit: dsa-run allocates the layer state with Tensor::zeros (dsa-golden refuses the ratio).
    ("state-above-byte-limit", ("dsa-run-cpu", "dsa-golden"), ratios([0, 0, 65536, 65536, 1, 1]),
     {"DSA_MAX_TENSOR_BYTES": "4000000"}),
    ("hc-sinkhorn-iters-1e12", READER, fixture("hc_sinkhorn_iters", 10 ** 12)),
    ("duplicate-key-fixture", READER, ("text", '"window_size": 8,', '"window_size": 8, "window_size": 16,')),
    ("duplicate-key-weight", READER, ("text", '"kind": "f32"', '"kind": "f32", "kind": "f32"')),
    ("duplicate-key-capture", READER, ("text", '"L0.sa_q": {"shape"', '"L0.sa_q": {"stride": 1, "shape"')),
    ("batch-2", READER, fixture("batch", 2)),
    ("dtype-fp64", READER, fixture("dtype", "fp64")),
    ("expert-dtype-fp4", READER, fixture("expert_dtype", "fp4")),
    ("weight-kind-unknown", READER, weight("layers.0.attn.wq_a.weight", kind="fp4")),
    ("weight-dtype-unknown", READER, weight("layers.0.attn.wq_a.weight", dtype="float64")),
    ("weight-shape-negative", READER, weight("layers.0.attn.attn_sink", shape=[-1], n=-1)),
    ("weight-n-above-byte-limit", READER, weight("layers.0.attn.attn_sink", shape=[2 ** 40], n=2 ** 40)),
    ("capture-n-overflow", READER, capture("prefill12", "L0.sa_q", shape=[2 ** 62, 4], n=2 ** 62)),
    ("capture-stride-2^62", READER, capture("prefill12", "L0.sa_q", stride=2 ** 62, data=[0.0])),
    ("rope-theta-zero", READER, fixture("rope_theta", 0.0)),
    # The golden's configuration against the step libraries (emitted from the unchanged golden).
    ("compiled-for-window-size", LIBRARIES, fixture("window_size", 16)),
    ("compiled-for-head-dim", LIBRARIES, fixture("head_dim", 64)),
    ("compiled-for-dim", LIBRARIES, fixture("dim", 128)),
    ("compiled-for-n-heads", LIBRARIES, fixture("n_heads", 8)),
    ("compiled-for-max-seq-len", LIBRARIES, fixture("max_seq_len", 128)),
    ("compiled-for-index-head-dim", LIBRARIES, fixture("index_head_dim", 64)),
    ("compiled-for-ratio", LIBRARIES, ratios([0, 0, 4, 4, 1, 1])),
    ("compiled-for-window-only", LIBRARIES, ratio(3, 0)),
    ("compiled-for-compressed", LIBRARIES, lambda g: g["fixture"].update(
        compress_ratios=[0, 2, 2, 2, 1, 1], kv_source_layers=[1, 2, 4], index_source_layers=[1, 2, 4, 5])),
    ("compiled-for-kv-source", LIBRARIES, fixture("kv_source_layers", [2, 3, 4])),
    ("compiled-for-index-source", LIBRARIES, fixture("index_source_layers", [2, 3, 4, 5])),
    ("compiled-for-weight-shape", LIBRARIES, weight("layers.0.attn.attn_sink", shape=[2, 2])),
    # What no shape shows: the dsa.attention configuration the libraries record (the code's constants).
    ("compiled-for-rope-theta", LIBRARIES, fixture("rope_theta", 20000.0)),
    ("compiled-for-compress-rope-theta", LIBRARIES, fixture("compress_rope_theta", 80000.0)),
    ("compiled-for-rope-factor", LIBRARIES, fixture("rope_factor", 4.0)),
    ("compiled-for-original-seq-len", LIBRARIES, fixture("original_seq_len", 64)),
    ("compiled-for-beta-fast", LIBRARIES, fixture("beta_fast", 16)),
    ("compiled-for-beta-slow", LIBRARIES, fixture("beta_slow", 2)),
    ("compiled-for-norm-eps", LIBRARIES, fixture("norm_eps", 1e-06)),
    ("compiled-for-index-n-heads", LIBRARIES, fixture("index_n_heads", 4)),
    ("compiled-for-index-topk", LIBRARIES, fixture("index_topk", 7)),
    ("compiled-for-candidate-topk-blocks", LIBRARIES, fixture("candidate_topk_blocks", 2)),
    ("compiled-for-candidate-block-size", LIBRARIES, fixture("candidate_block_size", 4)),
    ("compiled-for-candidate-source", LIBRARIES, fixture("candidate_source_layer", -1)),
    ("compiled-for-q-lora-rank", LIBRARIES, fixture("q_lora_rank", 32)),
    ("compiled-for-o-groups", LIBRARIES, fixture("o_groups", 4)),
    ("compiled-for-o-lora-rank", LIBRARIES, fixture("o_lora_rank", 32)),
    ("compiled-for-rope-head-dim", LIBRARIES, fixture("rope_head_dim", 16)),
    # Unknown keys in the golden itself (a misspelt key was ignored; a misspelt required one reported missing).
    ("unknown-key-fixture", READER, ("text", '"window_size": 8,', '"window_sise": 8,')),
    ("unknown-key-optional", READER, fixture("n_token", 16)),
    ("unknown-key-weight", READER, weight("layers.0.attn.wq_a.weight", scael=1.0)),
    ("unknown-key-capture", READER, capture("decode12", "L0.sa_q", strides=1)),
    ("unknown-key-top-level", READER, lambda g: g.update(decode14=g["decode13"])),
]


def command(tool, path, libraries):
    if tool == "dsa-run":
        return ["dsa-run", "--golden", path, "--layers", "0"]
    if tool == "dsa-run-cpu":
        return ["dsa-run", "--golden", path, "--backend=cpu"]
    return ["dsa-golden", "--golden", path, "--libraries", libraries]


def message(output):
    lines = [l for l in output.splitlines() if l.strip()]
    for l in lines:
        if "error:" in l:
            return l
    return lines[-1] if lines else "(no output)"


def main():
    src, out, libraries = sys.argv[1], sys.argv[2], sys.argv[3]
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
    os.makedirs(out, exist_ok=True)
    with open(src) as f:
        text = f.read()
    for name, tools, mutation, *env in CLASSES:
        environment = dict(os.environ, **(env[0] if env else {}))
        if isinstance(mutation, tuple):
            _, old, new = mutation
            dumped = json.dumps(json.loads(text))
            if dumped.count(old) < 1:
                raise SystemExit("bad_input_matrix: %s: '%s' not in the golden" % (name, old))
            mutated = dumped.replace(old, new, 1)
        else:
            g = json.loads(text)
            mutation(g)
            mutated = json.dumps(g)
        path = os.path.join(out, name + ".json")
        with open(path, "w") as f:
            f.write(mutated)
        for tool in tools:
            try:
                p = subprocess.run(command(tool, path, libraries), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=timeout, universal_newlines=True, env=environment)
                status = "signal %d" % -p.returncode if p.returncode < 0 else str(p.returncode)
                text_out = p.stdout
            except subprocess.TimeoutExpired as e:
                status = "timeout"
                text_out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            print("%s %s: status %s: %s" % (name, tool, status, message(text_out)), flush=True)


if __name__ == "__main__":
    main()
