"""DeepSeek's golden (../shared/spec/tiny-model-harness.md): replay it, or take one of its layers.

    report = dsa.golden.replay("test/Golden/ds41_tiny_golden.json")           # the reference interpreter
    report = dsa.golden.replay(path, backend="cpu", layers=[0])              # the CPU JIT, layer 0 alone
    print(report.summary)       # golden: 441 passed, 0 failed (2 not compared), as dsa-run --golden prints it
    [v for v in report.verdicts if not v.passed]

replay() is dsa-run --golden (tools/dsa-run/GoldenReplay.h replayGolden): the same verdicts in the same order.
A Verdict has name, regime, status ("PASS" / "FAIL" / "SKIP"), passed, max_abs, max_ulp, compared, mismatches,
flips, near_ties, ck_got, ck_want, detail and line (dsa-run's line); a Report verdicts, passed, failed,
not_compared, flips, near_ties, all_passed, summary, exit_status (dsa-run's). echo=True also prints dsa-run's
lines on stdout. An error that stops the replay (a bad path, field or option) raises dsa.Error.
"""
from . import _dsa
from ._arrays import from_raw

Report = _dsa.Report
Verdict = _dsa.Verdict


def replay(path, backend="interpret", layers=(), force=False, resync=False, index_k_source="published_slot",
           cpu="", resident_weights_mb=4096, echo=False):
    return _dsa.replay(str(path), backend, list(layers), force, resync, index_k_source, cpu, resident_weights_mb,
                       echo)


class Layer:
    """Layer `layer` of a golden as dsa-run replays it: module holds `function` (@attention_L<l>, one dsa.attention
    configured from the fixture); its arguments are x [s, dim] bf16, start_pos, ring, weights..., state...,
    and the four shared slots when has_shared_slots. weights are the golden's (regenerated, ck-checked), named by
    weight_names, in argument order: what dsa.runtime.StepLibrary.sequence() takes."""

    def __init__(self, raw):
        self.layer = raw.layer
        self.function = raw.function
        self.dim = raw.dim
        self.module = raw.module
        self.weight_names = raw.weight_names
        self.weights = [from_raw(w) for w in raw.weights]
        self.ring = from_raw(raw.ring)
        self.state = [from_raw(s) for s in raw.state]
        self.has_shared_slots = raw.has_shared_slots


def layer(path, layer, index_k_source="published_slot", batched=False):
    """Layer `layer` of the golden at `path`. batched=True: module holds the layer's batched decode step instead
    (x [B, 1, dim], start_pos [B], ring / state / slots with a leading B: StepLibrary.batch runs it); ring and state
    are still one sequence's initial values."""
    return Layer(_dsa.golden_layer(str(path), layer, index_k_source, batched))
