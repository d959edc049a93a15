"""The reference interpreter (compiler/include/dsa/Interpreter/Interpreter.h) on numpy arrays.

    results = dsa.interpreter.run(module, "main", [x, 0, ring, *weights])    # the func.return operands
    results, probes = dsa.interpreter.run(module, "main", args, probes=True)   # probes: [(name, array)]

Arguments: numpy arrays (ml_dtypes.bfloat16, float32, bool, int32, int64) or Python ints (i64 scalars; an index
operand takes an int64 value). A module with dsa.attention is decomposed first (dsa-decompose-attention, on a
copy) unless decompose=False. Errors raise dsa.Error with the interpreter's diagnostic (naming e.g.
"argument #2").
"""
from . import _dsa
from ._arrays import from_raw, to_raw


def run(module, function, args, probes=False, decompose=True):
    m = _dsa.decompose(module) if decompose else module
    raws = [to_raw(a, f"args[{i}]") for i, a in enumerate(args)]
    results, probed = _dsa.interpret(m, function, raws)
    out = [from_raw(r) for r in results]
    if probes:
        return out, [(name, from_raw(r)) for name, r in probed]
    return out


def sequence(module, signature, weights):
    """A dsa.runtime.Sequence whose steps the interpreter runs: `module`'s function named signature.name (decomposed
    on a copy) under `signature` (a compiled step library's: dsa.runtime.StepLibrary.signature()), so it takes the
    same steps, with the same state threading and checks (runtime::Sequence), as the library's sequence."""
    from .runtime import Sequence, _weights
    return Sequence(_dsa.interpreter_sequence(module, signature, _weights(weights)))
