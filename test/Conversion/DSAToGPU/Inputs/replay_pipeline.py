"""Replays a pass pipeline that `dsa-opt --dump-pass-pipeline` printed.

usage: replay_pipeline.py DSA_OPT DUMP INPUT OUTPUT
       replay_pipeline.py --strip-timings IR OUTPUT

DUMP is the stderr of `dsa-opt ... --dump-pass-pipeline` ("Pass Manager with N passes:" then the textual pipeline,
one pass per line from `builtin.module(` on); the textual pipeline is run on INPUT with
`DSA_OPT --pass-pipeline=<it>`, the IR written to OUTPUT. Fails if DUMP holds no pipeline.

--strip-timings copies IR to OUTPUT without the compile times that gpu-module-to-binary records in each
#gpu.object's properties (`LLVMIRToISATimeInMs = 86 : i64`, ...), the one part of two runs' IR that may differ."""
import re
import subprocess
import sys

if sys.argv[1] == "--strip-timings":
    text = open(sys.argv[2]).read()
    open(sys.argv[3], "w").write(re.sub(r"\b\w+TimeInMs = \d+ : i64(, )?", "", text))
    sys.exit(0)

dsa_opt, dump, source, output = sys.argv[1:5]
text = open(dump).read()
start = text.find("builtin.module(")
if start < 0:
    sys.exit("replay_pipeline.py: no builtin.module(...) pipeline in " + dump)
pipeline = " ".join(line.strip() for line in text[start:].splitlines())
sys.exit(subprocess.call([dsa_opt, source, "--pass-pipeline=" + pipeline, "-o", output]))
