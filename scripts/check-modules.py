#!/usr/bin/env python3
"""Fails when a module imports a module that imports it (a module cycle), in any crate of the workspace.

Usage: check-modules.py [WORKSPACE_DIR]   check every crate of the workspace (default: the repository)
       check-modules.py --self-test       check the fixtures under scripts/testdata/check-modules first

How it reads a crate: it walks the module tree from each crate root (`src/lib.rs`, `src/main.rs`,
`src/bin/*.rs`, the `path` of every `[[test]]`/`[[bin]]`) through `mod x;` and inline `mod x { … }`, and
takes every path that starts with `crate::`, `super::` or `self::` (use trees included) as an import of
the deepest module the path names. Comments and string literals are skipped, and so are test modules
(`#[cfg(test)] mod …`): a test may use any module to build its fixtures without making the product's
modules depend on each other.

What counts as a cycle: a child module is part of its parent, so an import between a module and one of
its ancestors or descendants is ignored, and an import from `a::x` to `b::y` (siblings `a` and `b` under
their deepest common ancestor) makes `a` import `b`. A cycle is a closed chain of such imports among the
children of one module; every elementary cycle is listed with the `file:line` of the imports behind it.

Re-exports are not followed: a path through one counts as an import of the module that re-exports
(`crate::X` as one of the crate root, which every module is part of, so it never counts). Inside a
crate, import an item from the module that owns it.
"""

import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RAW_STRING = re.compile(r'b?r(#*)"')
CHAR_LITERAL = re.compile(r"b?'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'")
MOD_DECL = re.compile(r"\bmod\s+(r#)?([A-Za-z_][A-Za-z0-9_]*)\s*([;{])")
# `#[cfg(test)]` (and any further attributes, and a visibility) right before a `mod`.
CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]\s*(#\s*\[[^\]]*\]\s*)*(pub(\s*\([^)]*\))?\s+)?$")
PATH_START = re.compile(r"(?<![A-Za-z0-9_$])(crate|super|self)\s*::")
# Elementary cycles listed per crate at most; past this the checker says how many it left out.
MAX_CYCLES = 200


def strip(text):
    """Replaces comments, string and char literals with spaces, keeping newlines (so lines still count)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not is_ident_char(text[i - 1])):
            end = text.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(blank(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i : j + 1]))
            i = j + 1
        elif c in "'b" and (m := CHAR_LITERAL.match(text, i)) and (i == 0 or not is_ident_char(text[i - 1])):
            out.append(" " * (m.end() - i))
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_ident_char(c):
    return c.isalnum() or c == "_"


def blank(s):
    return "".join("\n" if ch == "\n" else " " for ch in s)


def skip_ws(text, i):
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def parse_tree(text, i):
    """Parses a path or use tree at `i`: returns (list of segment lists, end index)."""
    segments = []
    while True:
        i = skip_ws(text, i)
        if text.startswith("{", i):
            paths, i = parse_group(text, i + 1)
            return [segments + p for p in paths], i
        if text.startswith("*", i):
            return [segments], i + 1
        m = IDENT.match(text, i)
        if not m:
            return [segments], i
        segments.append(m.group(0))
        i = skip_ws(text, m.end())
        if not text.startswith("::", i):
            return [segments], i
        i += 2


def parse_group(text, i):
    """Parses the inside of `{ … }` in a use tree, from after `{` to after `}`."""
    paths = []
    while True:
        i = skip_ws(text, i)
        if i >= len(text):
            return paths, i
        if text[i] == "}":
            return paths, i + 1
        if text[i] == ",":
            i += 1
            continue
        sub, j = parse_tree(text, i)
        paths.extend(sub)
        if j == i:
            j += 1
        i = j


class Crate:
    """The module tree of one crate root and the imports between its modules."""

    def __init__(self, root_file):
        self.root_file = root_file
        self.files = {}  # module path (tuple) -> file defining it
        self.inline = set()  # module paths declared inline
        self.tests = set()  # module paths of `#[cfg(test)]` modules
        self.sources = []  # (file, stripped text, module path of the file, module dir)
        self.edges = []  # (from module, to module, file, line, path text)
        self.load(root_file, (), os.path.dirname(root_file))
        self.resolve_imports()

    def load(self, path, module, module_dir):
        """Reads a module file and, through its `mod` declarations, every file under it."""
        self.files[module] = path
        with open(path, encoding="utf-8") as f:
            text = strip(f.read())
        self.sources.append((path, text, module, module_dir))
        for name, inner, inner_dir, semicolon, test in self.declarations(text, module, module_dir):
            if test:
                self.tests.add(inner)
                continue
            if not semicolon:
                self.inline.add(inner)
                continue
            for candidate in (os.path.join(inner_dir + ".rs"), os.path.join(inner_dir, "mod.rs")):
                if os.path.isfile(candidate):
                    self.load(candidate, inner, inner_dir)
                    break
            else:
                raise SystemExit(f"check-modules: `mod {name};` in {path} has no file {inner_dir}.rs or {inner_dir}/mod.rs")

    def declarations(self, text, module, module_dir):
        """Yields (name, module path, module dir, is `mod x;`, is a test module) for every `mod` in a file."""
        for m in MOD_DECL.finditer(text):
            scope, scope_dir = self.scope_at(text, m.start(), module, module_dir)
            name = m.group(2)
            test = CFG_TEST.search(text, max(0, m.start() - 400), m.start()) is not None
            yield name, scope + (name,), os.path.join(scope_dir, name), m.group(3) == ";", test

    def scope_at(self, text, pos, module, module_dir):
        """The module (inline ones counted) that the text at `pos` belongs to, and its directory."""
        stack = []  # (inline module name, brace depth inside it)
        depth = 0
        i = 0
        decls = {m.end() - 1: m.group(2) for m in MOD_DECL.finditer(text, 0, pos) if m.group(3) == "{"}
        while i < pos:
            c = text[i]
            if c == "{":
                depth += 1
                if i in decls:
                    stack.append((decls[i], depth))
            elif c == "}":
                if stack and stack[-1][1] == depth:
                    stack.pop()
                depth -= 1
            i += 1
        names = tuple(name for name, _ in stack)
        return module + names, os.path.join(module_dir, *names) if names else module_dir

    def resolve_imports(self):
        for path, text, module, module_dir in self.sources:
            line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
            i = 0
            while (m := PATH_START.search(text, i)) is not None:
                trees, end = parse_tree(text, m.start())
                scope, _ = self.scope_at(text, m.start(), module, module_dir)
                if any(scope[:k] in self.tests for k in range(1, len(scope) + 1)):
                    i = max(end, m.end())
                    continue
                line = bisect(line_starts, m.start())
                for segments in trees:
                    target = self.resolve(scope, segments)
                    if target is not None and not related(scope, target):
                        self.edges.append((scope, target, path, line, "::".join(segments)))
                i = max(end, m.end())

    def resolve(self, scope, segments):
        """The deepest known module a path names, or None when it leaves the crate."""
        base = list(scope)
        rest = list(segments)
        if rest and rest[0] == "crate":
            base, rest = [], rest[1:]
        while rest and rest[0] in ("self", "super"):
            if rest[0] == "super":
                if not base:
                    return None
                base.pop()
            rest = rest[1:]
        module = tuple(base)
        for name in rest:
            if module + (name,) in self.files or module + (name,) in self.inline:
                module = module + (name,)
            else:
                break
        return module

    def cycles(self):
        """Every elementary cycle among the children of each module, with the imports behind each hop."""
        evidence = {}
        for src, dst, path, line, text in self.edges:
            common = common_prefix(src, dst)
            hop = (src[: len(common) + 1], dst[: len(common) + 1])
            evidence.setdefault(hop, []).append(f"{path}:{line} `{text}`")
        graph = {}
        for a, b in evidence:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
        return [(c, [evidence[(c[k], c[(k + 1) % len(c)])] for k in range(len(c))]) for c in elementary_cycles(graph)], evidence


def bisect(starts, pos):
    lo, hi = 0, len(starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid
    return lo + 1


def related(a, b):
    """Whether one module is the other, or an ancestor of it."""
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def common_prefix(a, b):
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return a[:k]


def elementary_cycles(graph):
    """Johnson-style enumeration: each cycle once, starting at its smallest node; at most MAX_CYCLES + 1."""
    nodes = sorted(graph)
    found = []
    for start in nodes:
        allowed = {n for n in nodes if n >= start}
        stack = [(start, iter(sorted(graph[start] & allowed)))]
        path, on_path = [start], {start}
        while stack and len(found) <= MAX_CYCLES:
            node, successors = stack[-1]
            nxt = next(successors, None)
            if nxt is None:
                stack.pop()
                on_path.discard(path.pop())
            elif nxt == start:
                found.append(list(path))
            elif nxt not in on_path:
                stack.append((nxt, iter(sorted(graph[nxt] & allowed))))
                path.append(nxt)
                on_path.add(nxt)
    return found


def name(module):
    return "::".join(("crate",) + module)


def crate_roots(workspace):
    """Every crate root of every member of the workspace at `workspace`."""
    with open(os.path.join(workspace, "Cargo.toml"), encoding="utf-8") as f:
        members = re.search(r"members\s*=\s*\[([^\]]*)\]", f.read())
    roots = []
    for member in re.findall(r'"([^"]+)"', members.group(1)) if members else ["."]:
        base = os.path.join(workspace, member)
        with open(os.path.join(base, "Cargo.toml"), encoding="utf-8") as f:
            manifest = f.read()
        candidates = [os.path.join(base, "src", "lib.rs"), os.path.join(base, "src", "main.rs")]
        bin_dir = os.path.join(base, "src", "bin")
        if os.path.isdir(bin_dir):
            candidates += sorted(os.path.join(bin_dir, f) for f in os.listdir(bin_dir) if f.endswith(".rs"))
        for section in re.findall(r"\[\[(?:test|bin|bench|example)\]\]([^\[]*)", manifest):
            path = re.search(r'^\s*path\s*=\s*"([^"]+)"', section, re.M)
            if path:
                candidates.append(os.path.join(base, path.group(1)))
        roots += [c for c in dict.fromkeys(candidates) if os.path.isfile(c)]
    return roots


def check(workspace, out):
    """Prints every cycle of every crate in `workspace`; returns how many it found."""
    total = 0
    for root in crate_roots(workspace):
        crate = Crate(root)
        cycles, _ = crate.cycles()
        rel = os.path.relpath(root, workspace)
        for modules, hops in cycles[:MAX_CYCLES]:
            total += 1
            chain = " -> ".join(name(m) for m in modules + [modules[0]])
            print(f"{rel}: cycle: {chain}", file=out)
            for k, evidence in enumerate(hops):
                target = modules[(k + 1) % len(modules)]
                more = f" (and {len(evidence) - 3} more)" if len(evidence) > 3 else ""
                print(f"    {name(modules[k])} imports {name(target)}: {', '.join(evidence[:3])}{more}", file=out)
        if len(cycles) > MAX_CYCLES:
            print(f"{rel}: more than {MAX_CYCLES} cycles; the first {MAX_CYCLES} are listed", file=out)
    return total


def self_test(here):
    """Checks the checker on fixtures whose cycles are known, so it cannot pass by finding nothing."""
    import io

    fixtures = os.path.join(here, "testdata", "check-modules")
    expected = {
        "cyclic": [
            "crate::a -> crate::b -> crate::c -> crate::a",
            "crate::a -> crate::error -> crate::a",
            "crate::c::x -> crate::c::y -> crate::c::x",
        ],
        "acyclic": [],
    }
    for fixture, cycles in expected.items():
        buf = io.StringIO()
        check(os.path.join(fixtures, fixture), buf)
        found = sorted(line.split("cycle: ", 1)[1] for line in buf.getvalue().splitlines() if "cycle: " in line)
        if found != sorted(cycles):
            print(f"check-modules self-test: fixture `{fixture}` gave {found}, expected {sorted(cycles)}", file=sys.stderr)
            print(buf.getvalue(), file=sys.stderr)
            return False
    return True


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    if argv[1:2] == ["--self-test"]:
        if not self_test(here):
            return 1
        print("check-modules: self-test passed", file=sys.stderr)
        argv = argv[:1] + argv[2:]
    workspace = argv[1] if len(argv) > 1 else os.path.dirname(here)
    found = check(workspace, sys.stdout)
    if found:
        print(f"check-modules: {found} module cycle(s); hint: move what both sides need into a module neither imports", file=sys.stderr)
        return 1
    print("check-modules: no module cycles", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
