#!/usr/bin/env python3
"""Writes a C source file defining a const char array with a text file's
contents, so that libelk carries the experiment schema without depending
on an installed data file."""
import sys

src, dst, symbol = sys.argv[1:4]
with open(src, "rb") as f:
    data = f.read()
with open(dst, "w") as out:
    out.write("/* Generated from %s by core/embed-text.py. */\n" % src.split("/")[-1])
    out.write("const char %s[] = {\n" % symbol)
    for i in range(0, len(data), 16):
        out.write("  " + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    out.write("  0x00\n};\n")
