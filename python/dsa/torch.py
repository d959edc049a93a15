"""dsa from PyTorch: one layer step through the runtime on torch CPU tensors (optional: needs torch).

    layer = dsa.torch.Layer.from_golden("test/Golden/ds41_tiny_golden.json", 0, directory)   # compiled, golden weights
    y = layer(x, start_pos)                       # x [s, dim] torch.bfloat16 -> y [s, dim] torch.bfloat16
    y = torch.ops.dsa.layer_step(layer.handle, x, start_pos)   # the same step through the custom op

`torch.ops.dsa.layer_step(handle, x, start_pos)` is a torch.library custom op: it runs one step of the sequence
`handle` names (a dsa.runtime.Sequence registered by Layer) and returns the output rows. It has a side effect torch
does not see: the sequence's resident state (ring, compressor state, caches) and position advance, as a layer's KV
cache does; run it eagerly, in step order. Its fake (meta) implementation gives the output's shape and dtype.

`Layer` is an nn.Module holding the layer's weights (buffers weight_0 ... in the order of the step library's
weight_args, named by `weight_names` when built from a golden) and its sequence; forward(x, start_pos) is one step.
The sequence copies the weights when it is created: after changing the buffers, reload() starts a new sequence
from them (position 0). Errors are dsa.Error naming the argument (x, start_pos, ...), the state unchanged.
"""
import itertools

import numpy as np
import torch

from . import compiler, golden, runtime
from ._arrays import bfloat16
from ._dsa import Error

_sequences = {}
_ids = itertools.count(1)


def to_numpy(t):
    """A CPU tensor as a numpy array of dsa's element types (torch.bfloat16 -> ml_dtypes.bfloat16; a copy)."""
    if not isinstance(t, torch.Tensor):
        return t
    if t.device.type != "cpu":
        raise Error(f"tensor on {t.device}: dsa's runtime runs CPU step libraries on CPU tensors")
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).view(bfloat16).copy()
    return t.numpy().copy()


def from_numpy(a):
    """A numpy array as a torch tensor (ml_dtypes.bfloat16 -> torch.bfloat16)."""
    if a.dtype == bfloat16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a).copy())


@torch.library.custom_op("dsa::layer_step", mutates_args=(), device_types="cpu")
def layer_step(handle: int, x: torch.Tensor, start_pos: int) -> torch.Tensor:
    seq = _sequences.get(handle)
    if seq is None:
        raise Error(f"handle: no dsa sequence {handle} (a dsa.torch.Layer's handle)")
    return from_numpy(seq.step(to_numpy(x), start_pos))


@layer_step.register_fake
def _(handle, x, start_pos):
    return torch.empty_like(x)


class Layer(torch.nn.Module):
    def __init__(self, library, weights, weight_names=None, function=None):
        super().__init__()
        self.library = library if isinstance(library, runtime.StepLibrary) else runtime.StepLibrary(library)
        self.function = function
        self.weight_names = list(weight_names) if weight_names is not None else None
        for i, w in enumerate(weights):
            self.register_buffer(f"weight_{i}", w if isinstance(w, torch.Tensor) else from_numpy(np.asarray(w)))
        self._count = len(weights)
        self.handle = next(_ids)
        self.reload()

    @classmethod
    def from_golden(cls, path, layer, directory, index_k_source="published_slot"):
        """Layer `layer` of a golden (dsa.golden.layer) compiled to a CPU step library in `directory`. Only layers
        without shared slots (compress_ratio 0): a compressed layer reads slots that earlier layers publish."""
        g = golden.layer(path, layer, index_k_source)
        if g.has_shared_slots:
            raise Error(f"layer: {layer} has compress_ratio > 0 and reads the shared slots of the layers before it: "
                        "drive it with dsa.runtime (slots=) instead")
        lib = runtime.StepLibrary(compiler.compile_cpu(g.module, directory))
        return cls(lib, [from_numpy(w) for w in g.weights], g.weight_names)

    def weights(self):
        return [getattr(self, f"weight_{i}") for i in range(self._count)]

    def reload(self):
        """A new sequence (position 0) from the current weight buffers."""
        seq = self.library.sequence([to_numpy(w) for w in self.weights()], self.function)
        if seq.signature.has_shared_slots:
            raise Error("library: the layer reads shared slots; dsa.torch.Layer runs layers without them")
        _sequences[self.handle] = seq

    @property
    def position(self):
        return _sequences[self.handle].position

    def state(self):
        """{argument index: tensor}: the sequence's state after the last step."""
        return {k: from_numpy(v) for k, v in _sequences[self.handle].state().items()}

    def forward(self, x, start_pos):
        return torch.ops.dsa.layer_step(self.handle, x, int(start_pos))

    def __del__(self):
        _sequences.pop(getattr(self, "handle", None), None)
