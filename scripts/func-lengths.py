#!/usr/bin/env python3
"""func-lengths.py - the length of every C function definition in the given files.

Usage: scripts/func-lengths.py [--max N] [--allow NAME]... FILE.c...

Prints "FILE:LINE: NAME: N lines" for every function longer than N lines (default 80), from
the first line of its signature to its closing brace, longest first, and exits 1 when there is
one (0 when none). Without --max it lists every function. A function is a top-level block
whose header (the text since the previous top-level ';', '}' or preprocessor line) holds a
parameter list and no '='; comments, strings and character literals are skipped, so braces in
them do not count. --allow NAME lets function NAME stay over the limit (listed, marked
"allowed", not failing): the ones still to split. Issue 23's rule for tools/hsad: no function of a command over 80 lines.
"""
import re
import sys


def strip(text):
    """text with comments, strings and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(path):
    """(name, first line, line count) of each function defined in path."""
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = strip(f.read()).split('\n')
    found, depth, header, start, name = [], 0, '', None, None
    for no, line in enumerate(lines, 1):
        if depth == 0 and line.startswith('#'):
            header = ''
            continue
        for ch in line:
            if depth == 0:
                if ch == '{':
                    h = header.strip()
                    m = re.search(r'(\w+)\s*\([^=]*\)[^=()]*$', h, re.S)
                    if m and not re.match(r'(typedef|struct|enum|union)\b', h) or \
                            m and re.match(r'(static\s+)?(inline\s+)?struct\s+\w+\s*\*?\s*\w+\s*\(',
                                           h):
                        name = m.group(1)
                        first = no - h.count('\n')
                        start = first
                    else:
                        name = None
                    depth = 1
                elif ch in ';}':
                    header = ''
                else:
                    header += ch
            else:
                if ch == '{':
                    depth += 1
                elif ch == '}':
                    depth -= 1
                    if depth == 0:
                        if name:
                            found.append((name, start, no - start + 1))
                        header, name = '', None
        if depth == 0:
            header += '\n'
    return found


def main(argv):
    limit = None
    files, allowed = [], set()
    it = iter(argv)
    for a in it:
        if a == '--max':
            limit = int(next(it))
        elif a.startswith('--max='):
            limit = int(a[6:])
        elif a == '--allow':
            allowed.add(next(it))
        else:
            files.append(a)
    rows = []
    for path in files:
        for name, first, count in functions(path):
            if limit is None or count > limit:
                rows.append((count, path, first, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    failing = 0
    for count, path, first, name in rows:
        ok = limit is None or name in allowed
        failing += not ok
        print(f'{path}:{first}: {name}: {count} lines{"" if limit is None or not ok else " (allowed)"}')
    if failing:
        print(f'{failing} function(s) over {limit} lines', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
