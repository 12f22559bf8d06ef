#!/usr/bin/python3
"""include_order.py SHIM_DIR LAYER... — shim/README.md's include rule, read
from the #include "..." lines of every file under SHIM_DIR.

  include/  spillway.h: includes nothing of the shim
  common/   only common/
  abi/      abi/, common/, include/
  front/    front/, abi/, common/, include/ (never an engine header)
  engine/   a layer folder includes its own headers and those of the layers
            below it, always with the folder named ("registry/region.h");
            abi/, common/ and include/ headers by their bare name. The
            engine's own top (engine/*.cpp) may include any layer. Folders
            given in one LAYER argument ("large shm") share a rank: neither
            includes the other.

The layers are given bottom first, as shim/engine/meson.build lists them.
Prints one line per wrong include (file:line, what, and the rule) and exits
1 if there is any; a folder under engine/ that no LAYER names is wrong too.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = ('.h', '.hpp', '.c', '.cpp')
# The folders every library may read, by bare name.
BASE = ('abi', 'common', 'include')
# What each non-engine folder may include, by bare name.
ALLOWED = {'include': (), 'common': ('common',), 'abi': BASE, 'front': ('front',) + BASE}


def main():
    if len(sys.argv) < 3:
        print('usage: include_order.py SHIM_DIR LAYER...', file=sys.stderr)
        return 2
    shim = os.path.abspath(sys.argv[1])
    rank = {}  # engine layer folder -> rank (0 = bottom)
    for i, entry in enumerate(sys.argv[2:]):
        for folder in entry.split():
            rank[folder] = i
    top = len(sys.argv) - 2  # the engine's own files, above every layer
    errors = []

    def has(folder, name):
        return os.path.isfile(os.path.join(shim, folder, name))

    def check_plain(rel, folder, lineno, name):
        if not any(has(d, name) for d in ALLOWED[folder]):
            where = ', '.join(d + '/' for d in ALLOWED[folder]) or 'nothing of the shim'
            errors.append(f'shim/{rel}:{lineno}: includes "{name}": {folder}/ may include only {where}')

    def check_engine(rel, layer, lineno, name):
        me = rank.get(layer, top) if layer else top
        here = f'engine/{layer}/' if layer else 'engine/'
        if '/' in name:
            folder = name.split('/', 1)[0]
            if folder not in rank or not has('engine', name):
                errors.append(f'shim/{rel}:{lineno}: includes "{name}", which is no header of an engine layer')
            elif folder != layer and rank[folder] >= me:
                below = sorted((f for f in rank if rank[f] < me), key=lambda f: rank[f])
                can = ', '.join(f + '/' for f in below) or 'no other layer'
                errors.append(f'shim/{rel}:{lineno}: includes "{name}": {here} may include its own folder and '
                              f'the layers below it ({can}), not {folder}/ (shim/README.md)')
            return
        if layer and has(os.path.join('engine', layer), name):
            errors.append(f'shim/{rel}:{lineno}: includes "{name}": name the folder, "{layer}/{name}"')
        elif has('engine', name):
            if layer:
                errors.append(f'shim/{rel}:{lineno}: includes "{name}": the engine\'s top (engine/{name}) is '
                              f'above every layer; {here} may not include it')
        elif not any(has(d, name) for d in BASE):
            errors.append(f'shim/{rel}:{lineno}: includes "{name}", which is in none of engine/, abi/, '
                          f'common/, include/')

    for folder in sorted(os.listdir(os.path.join(shim, 'engine'))):
        if os.path.isdir(os.path.join(shim, 'engine', folder)) and folder not in rank:
            errors.append(f'shim/engine/{folder}/: no rank; add it to engine_layers in shim/engine/meson.build')

    for root, _, files in os.walk(shim):
        for f in sorted(files):
            if not f.endswith(SOURCES):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, shim)
            parts = rel.split(os.sep)
            with open(path, encoding='utf-8') as text:
                for lineno, line in enumerate(text, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    name = m.group(1)
                    if parts[0] == 'engine':
                        check_engine(rel, parts[1] if len(parts) > 2 else '', lineno, name)
                    elif parts[0] in ALLOWED and len(parts) == 2:
                        check_plain(rel, parts[0], lineno, name)
                    else:
                        errors.append(f'shim/{rel}: a source file outside include/, common/, abi/, front/ '
                                      f'and engine/ (shim/README.md)')
                        break
    for e in errors:
        print(e)
    print(f'include_order: {len(errors)} wrong include(s)' if errors else 'include_order: every include follows '
          'shim/README.md')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
