"""dsa: DeepSeek-V4.1 sparse attention as an MLIR dialect, from Python (docs/embedding.md "Python").

Modules: dsa.compiler (parse / verify / print modules, pass pipelines, CPU and GPU step libraries), dsa.interpreter
(the reference interpreter on numpy arrays), dsa.runtime (step libraries and sequences with resident state),
dsa.golden (DeepSeek's golden: replay and its layers). bf16 arrays are ml_dtypes.bfloat16 (dsa.bfloat16).
Every failure raises dsa.Error (a RuntimeError) whose message names the bad argument or field.
"""
import os as _os

# Step libraries link the runtime's archives (libDSACPURuntime.a, libDSANumerics.a): an installed package carries them
# in dsa/lib; in the build tree the compiler finds them where the build wrote them.
_lib = _os.path.join(_os.path.dirname(__file__), "lib")
if _os.path.isfile(_os.path.join(_lib, "libDSACPURuntime.a")):
    _os.environ.setdefault("DSA_RUNTIME_ARCHIVE_DIR", _lib)

from ._dsa import Error  # noqa: E402
from ._arrays import bfloat16  # noqa: E402
from . import compiler, golden, interpreter, runtime  # noqa: E402

__all__ = ["Error", "bfloat16", "compiler", "golden", "interpreter", "runtime"]
