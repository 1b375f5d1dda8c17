#!/usr/bin/env python3
"""Every symbol libelk exports has a gtk-doc comment block.

Usage: check-doc-coverage.py SYMBOLS_FILE SOURCE_DIR

SYMBOLS_FILE lists the exported symbols, one a line (core/libelk.symbols,
which tests/core/check-symbols.sh keeps equal to what the built library
exports).  A symbol counts as documented when some C file or header under
SOURCE_DIR has a block that opens with '/**' and names it on its first
line (' * symbol:', with or without annotations after the colon), and
that block says something beyond its own name.  get_type and error-quark
functions are symbols too and need their block like any other.

The stable API's blocks are also checked by the scanner and by
`gi-docgen check` (the docs suite), which see only what goes into the
GIR; this check covers the unstable compiler toolkit (elk-compile.h) as
well, which stays out of the GIR on purpose.  It prints the counts and
fails naming every undocumented symbol.
"""
import os
import re
import sys


def doc_blocks(source_dir):
    """Map each symbol named by a doc block to the block's text."""
    blocks = {}
    opener = re.compile(r'/\*\*\n \* ([A-Za-z_][A-Za-z0-9_]*):[^\n]*\n(.*?)\*/',
                        re.S)
    for folder, _dirs, names in os.walk(source_dir):
        for name in names:
            if not name.endswith(('.c', '.h', '.h.in')):
                continue
            with open(os.path.join(folder, name), encoding='utf-8') as f:
                text = f.read()
            for m in opener.finditer(text):
                blocks.setdefault(m.group(1), m.group(2))
    return blocks


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(sys.argv[1], encoding='utf-8') as f:
        symbols = [line.strip() for line in f if line.strip()]
    blocks = doc_blocks(sys.argv[2])
    missing = []
    for symbol in symbols:
        body = blocks.get(symbol)
        # A block must say something: a description, a Returns: line or a
        # parameter, not just ' *' lines.
        if body is None or not re.search(r'[A-Za-z]', body):
            missing.append(symbol)
    print('%d of %d exported symbols are documented'
          % (len(symbols) - len(missing), len(symbols)))
    if missing:
        print('undocumented (add a gtk-doc block naming each, with its '
              'parameters, ownership and Returns:):')
        for symbol in missing:
            print('  ' + symbol)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
