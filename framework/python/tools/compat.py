#!/usr/bin/python3
"""Write framework/python/COMPAT.md: which of Paddle 3.x's public names
Eddy's `paddle` package provides, generated from the code.

For every module in tools/paddle_api_names.txt (Paddle's API index) the
script imports Eddy's module and classifies each name:
  implemented  the name imports and its Python source raises no
               NotImplementedError (C built-ins count as implemented);
  partial      it imports but some argument or mode raises
               NotImplementedError -- the note quotes that message;
  missing      it does not import, or its body only raises
               NotImplementedError (a stub).
Public names Eddy has that the list lacks are listed per module as "extra".

Usage (paddle importable, e.g. from the build tree):
  PYTHONPATH=build/framework/python /usr/bin/python3 framework/python/tools/compat.py
  ... compat.py --check     # exit 1 when COMPAT.md is out of date
"""
import argparse
import ast
import importlib
import inspect
import os
import sys
import textwrap
import types

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = os.path.join(HERE, 'paddle_api_names.txt')
OUT = os.path.join(os.path.dirname(HERE), 'COMPAT.md')


def read_reference(path=NAMES):
    """{module: [names]} in file order."""
    mods, cur = {}, None
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            if line.startswith('[') and line.endswith(']'):
                cur = line[1:-1]
                mods.setdefault(cur, [])
                continue
            if cur is None:
                raise ValueError("{}: names before the first [module] header".format(path))
            for name in line.split():
                if name not in mods[cur]:
                    mods[cur].append(name)
    return mods


def _import(modname):
    try:
        return importlib.import_module(modname)
    except Exception:  # noqa: BLE001 - any failure means the module is missing
        parent, _, last = modname.rpartition('.')
        if parent:
            try:
                return getattr(importlib.import_module(parent), last)
            except Exception:  # noqa: BLE001
                return None
        return None


def _literal_text(node):
    """The text of a (possibly concatenated or .format()ed) string literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == 'format':
        return _literal_text(node.func.value)
    if isinstance(node, ast.BinOp):
        left, right = _literal_text(node.left), _literal_text(node.right)
        if left is not None or right is not None:
            return (left or '') + (right or '')
    if isinstance(node, ast.JoinedStr):
        return ''.join(v.value if isinstance(v, ast.Constant) else '...' for v in node.values)
    return None


_PROTOCOL_BASES = ('Layer', 'Metric', 'Optimizer', 'Callback', 'Dataset', 'IterableDataset',
                   'Sampler', 'RNNCellBase', 'BaseTransform', 'PyLayer', 'LRScheduler')


def _not_implemented(obj):
    """(is_stub, [messages]) for the NotImplementedError raises in obj's
    source; a class also counts the raises of the paddle base classes it
    inherits from (except the protocol bases users subclass)."""
    if isinstance(obj, type):
        if inspect.isabstract(obj) or obj.__name__ in _PROTOCOL_BASES:
            return False, []
        msgs = []
        for klass in obj.__mro__:
            if klass is object or klass.__name__ in _PROTOCOL_BASES or \
                    not (getattr(klass, '__module__', '') or '').startswith('paddle'):
                continue
            msgs += _source_raises(klass)[1]
        return False, msgs
    return _source_raises(obj)


def _source_raises(obj):
    try:
        src = textwrap.dedent(inspect.getsource(obj))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False, []
    msgs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc
            func = exc.func if isinstance(exc, ast.Call) else exc
            if isinstance(func, ast.Name) and func.id == 'NotImplementedError':
                text = _literal_text(exc.args[0]) if isinstance(exc, ast.Call) and exc.args \
                    else None
                # a bare raise marks an abstract method (a base class's protocol), not a gap
                if text:
                    msgs.append(text.replace('{}', '...').replace('{!r}', '...'))
    stub = False
    top = tree.body[0] if tree.body else None
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
        body = [s for s in top.body if not (isinstance(s, ast.Expr) and
                                            isinstance(getattr(s, 'value', None), ast.Constant))]
        stub = len(body) == 1 and isinstance(body[0], ast.Raise) and msgs != []
    return stub, msgs


def classify(mod, name):
    """('implemented' | 'partial' | 'missing', note)."""
    if mod is None:
        return 'missing', 'module not provided'
    try:
        obj = getattr(mod, name)
    except Exception:  # noqa: BLE001
        return 'missing', ''
    if callable(obj) or isinstance(obj, type):
        stub, msgs = _not_implemented(obj)
        if stub:
            return 'missing', 'stub: ' + _short(msgs[0])
        if msgs:
            uniq = []
            for m in msgs:
                if m not in uniq:
                    uniq.append(m)
            return 'partial', '; '.join(_short(m) for m in uniq[:3])
    return 'implemented', ''


def _short(text, n=110):
    text = ' '.join(text.split()).replace('|', '/')
    return text if len(text) <= n else text[:n - 3] + '...'


def extras(modname, mod, listed):
    """Public names Eddy's module provides beyond the reference list."""
    if mod is None:
        return []
    names = getattr(mod, '__all__', None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith('_')]
    out = []
    lazy = set(getattr(mod, '_LAZY_MODULES', ()))
    for n in sorted(set(names)):
        if n in listed or n.startswith('_') or n in lazy:
            continue
        try:
            obj = getattr(mod, n)
        except Exception:  # noqa: BLE001
            continue
        if isinstance(obj, types.ModuleType):
            continue
        owner = getattr(obj, '__module__', None) or ''
        if (callable(obj) or isinstance(obj, type)) and not owner.startswith('paddle'):
            continue
        if not (callable(obj) or isinstance(obj, type)):
            continue
        out.append(n)
    return out


def render(ref):
    rows, summary = [], []
    totals = {'implemented': 0, 'partial': 0, 'missing': 0}
    for modname, names in ref.items():
        mod = _import(modname)
        counts = {'implemented': 0, 'partial': 0, 'missing': 0}
        table = []
        for name in sorted(names, key=str.lower):
            status, note = classify(mod, name)
            counts[status] += 1
            table.append('| `{}` | {} | {} |'.format(name, status, note))
        extra = extras(modname, mod, set(names))
        for k in counts:
            totals[k] += counts[k]
        summary.append('| `{}` | {} | {} | {} | {} | {} |'.format(
            modname, len(names), counts['implemented'], counts['partial'], counts['missing'],
            len(extra)))
        rows.append('\n## `{}`\n'.format(modname))
        rows.append('| name | status | note |')
        rows.append('|---|---|---|')
        rows.extend(table)
        if extra:
            rows.append('\nAlso provided by Eddy (not in the list): ' +
                        ', '.join('`{}`'.format(n) for n in extra) + '.')
    head = [
        '# Paddle API compatibility',
        '',
        'Generated by `framework/python/tools/compat.py` from the code -- do not edit by hand;',
        'regenerate after changing the package (`tests/unit/python/test_compat.py` fails when',
        'this file is out of date):',
        '',
        '```',
        'PYTHONPATH=build/framework/python /usr/bin/python3 framework/python/tools/compat.py',
        '```',
        '',
        "Each name of Paddle 3.x's API index (`tools/paddle_api_names.txt`) is *implemented*",
        '(imports; no argument raises NotImplementedError), *partial* (imports, but the',
        "quoted NotImplementedError is raised for some arguments or modes) or *missing*",
        '(does not import, or is a stub). Implemented means present and exercised by the',
        "tests under tests/unit/python, not a proof of identical behaviour in every corner.",
        '',
        '| module | Paddle names | implemented | partial | missing | extra in Eddy |',
        '|---|---|---|---|---|---|',
    ]
    head.extend(summary)
    head.append('| **total** | {} | {} | {} | {} | |'.format(
        sum(totals.values()), totals['implemented'], totals['partial'], totals['missing']))
    return '\n'.join(head + rows) + '\n'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--check', action='store_true', help='exit 1 if the file is out of date')
    ap.add_argument('--out', default=OUT, help='where to write (default: %(default)s)')
    args = ap.parse_args(argv)
    text = render(read_reference())
    if args.check:
        try:
            with open(args.out, encoding='utf-8') as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        if old != text:
            sys.stderr.write("{} is out of date: run framework/python/tools/compat.py\n".format(
                args.out))
            if old is not None:
                import difflib
                diff = difflib.unified_diff(old.splitlines(), text.splitlines(), 'COMPAT.md',
                                            'generated', lineterm='', n=0)
                sys.stderr.write('\n'.join(list(diff)[:40]) + '\n')
            return 1
        return 0
    tmp = args.out + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
