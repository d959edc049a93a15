#!/usr/bin/env python3
"""Extracts the device code of a gpu.binary from MLIR text (the output of --dsa-gpu-pipeline).

With format=isa the gpu.object holds PTX as `assembly = "..."`; with format=bin a cubin as `bin = "..."`. MLIR
prints these as escaped strings (printable ASCII as is, other bytes as \\XX hex, backslash and quote escaped);
this script undoes the escaping and writes the bytes.

  extract-ptx.py INPUT.mlir [-o OUT] [--binary NAME] [--chip sm_90]

Exits non-zero with a message when the input has no matching gpu.binary / gpu.object.
"""
import argparse
import re
import sys


def unescape(s):
    out = bytearray()
    i = 0
    hexdigits = "0123456789abcdefABCDEF"
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            if i + 2 < len(s) and s[i + 1] in hexdigits and s[i + 2] in hexdigits:
                out.append(int(s[i + 1:i + 3], 16))
                i += 3
                continue
            out += s[i + 1].encode()
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--binary", default=None, help="name of the gpu.binary (default: the first)")
    ap.add_argument("--chip", default=None, help="select the gpu.object whose target has this chip")
    args = ap.parse_args()
    text = open(args.input, encoding="utf-8", errors="surrogateescape").read()
    binaries = list(re.finditer(r"gpu\.binary\s+@([\w$.]+)", text))
    if args.binary:
        binaries = [b for b in binaries if b.group(1) == args.binary]
    if not binaries:
        sys.exit("extract-ptx: no gpu.binary%s in %s" % (" @" + args.binary if args.binary else "", args.input))
    start = binaries[0].end()
    # Every gpu.object of this binary: the target attribute, then the payload string.
    objects = re.finditer(r'#gpu\.object<(#\w+\.target<[^>]*>)(.*?)\b(assembly|bin) = "((?:[^"\\]|\\.)*)"',
                          text[start:], re.S)
    for obj in objects:
        target = obj.group(1)
        if args.chip and ('chip = "%s"' % args.chip) not in target:
            continue
        data = unescape(obj.group(4))
        if args.output == "-":
            sys.stdout.buffer.write(data)
        else:
            with open(args.output, "wb") as f:
                f.write(data)
        return
    sys.exit("extract-ptx: no gpu.object%s in gpu.binary @%s" %
             (" for chip " + args.chip if args.chip else "", binaries[0].group(1)))


if __name__ == "__main__":
    main()
