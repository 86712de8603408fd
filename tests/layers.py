#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The layering of rackd and of rackckpt, checked from their sources
(`make check-layers`).

Each program's folders are layers, lowest first (README "Architecture",
checkpoint/README.md "Layers"). A file may include a header, or call a
function declared in one, of its own layer or a lower one, never a
higher one; between folders there is no cycle; a quoted include names a
header of the program's own layers. News travels up through what the
upper layer installed (event notifier, ops tables, handler tables,
callbacks): calls through a pointer (`d->reload(...)`,
`ops->path_down(...)`) are not calls by name and are not edges here.
Inside a folder, cycles between modules are allowed only when listed in
ALLOWED_CYCLES with the reason. The programs are checked apart: they
share only common/.

    tests/layers.py            check; exit 1 and say why on a violation
    tests/layers.py --picture  print the layers and who calls whom
    tests/layers.py --root DIR check the sources in DIR instead
"""

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Lowest first. A layer is a list of folders (or single files).
RACKD_LAYERS = [
    ("lib", ["common", "edp"],
     "shared with rackctl and rackckpt: addresses, control protocol, "
     "netlink requests, racks' option and keys"),
    ("io", ["rackd/io", "bpf"],
     "kernel I/O: event loop, timers, NFQUEUE, packets, raw sockets, "
     "rtnetlink, sock_diag, sd_notify, capabilities, log; the sock_ops "
     "program (bpf/) and its loader (bpfopt.c)"),
    ("core", ["rackd/core"],
     "connection table, configuration, events, key pool, shared state"),
    ("ruleset", ["nft"],
     "the nftables table, its sets and maps, the xt NFQUEUE fallback"),
    ("engine", ["rackd/engine"],
     "per-packet decision, set-up and message channel, liveness, hold, "
     "reconnect, splice, kept addresses, migration, probe answers"),
    ("persist", ["rackd/persist"], "the state file"),
    ("control", ["rackd/ctl"], "control socket and its commands"),
    ("main", ["rackd/main.c", "rackd/daemon.c", "rackd/daemon.h",
              "rackd/optpath.c", "rackd/optpath.h"],
     "main.c wires the layers together; daemon.c starts, reloads, stops; "
     "optpath.c chooses the option's path and wires the BPF one"),
]

RACKCKPT_LAYERS = [
    ("lib", ["common"],
     "shared with rackd: addresses, control protocol and its client, "
     "netlink requests, lo host addresses"),
    ("base", ["checkpoint/base"],
     "messages, allocation, whole-file writes, clocks, exec and exit"),
    ("proc", ["checkpoint/proc"],
     "process and CRIU handling: a tree's sockets from /proc, running "
     "CRIU, addresses on lo, nftables guards and CRIU's locks"),
    ("state", ["checkpoint/state"],
     "image and socket state: the checkpoint directory's files, the "
     "connections' state from and to rackd"),
    ("relay", ["checkpoint/relay"],
     "the relay: byte pumps, the wrapper of `run`, the loopback agent, "
     "the destination's bridge, the relay file and hello lines"),
    ("move", ["checkpoint/move"],
     "process trees: dump, restore (one, or a group), a node's checks "
     "(probe), clean-ups after a move, move through a command prefix"),
    ("job", ["checkpoint/job"],
     "MPI jobs: mpirun and the job's controller, the ranks' enlistment, "
     "requests to the controller, remote steps, plans, the mover"),
    ("cli", ["checkpoint/cli"],
     "the command line: subcommand table, options, output"),
]

PROGRAMS = [("rackd", RACKD_LAYERS), ("rackckpt", RACKCKPT_LAYERS)]

# Cycles between modules of one folder that are accepted, with why
# (frozenset of module paths -> reason). None today.
ALLOWED_CYCLES = {}

KEYWORDS = set("""if for while switch return sizeof do else case goto
    void int char bool unsigned signed long short float double const
    static inline struct union enum typedef extern volatile register
    defined offsetof alignof _Alignof _Static_assert __attribute__
    __typeof__ typeof""".split())


def strip(text):
    """The code without comments, strings and character constants."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    # __attribute__((format(printf, 2, 3))) calls nothing.
    return re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", text)


def layer_files(layers):
    """{path: layer index} for every .c and .h of LAYERS."""
    files = {}
    for i, (_, paths, _) in enumerate(layers):
        for p in paths:
            full = REPO / p
            found = [full] if full.is_file() else \
                sorted(full.glob("*.c")) + sorted(full.glob("*.h"))
            for f in found:
                files[f.relative_to(REPO).as_posix()] = i
    return files


def module(path):
    return path.rsplit(".", 1)[0]


def folder(path):
    return path.rsplit("/", 1)[0]


def declared(header_text):
    """Function names a header declares or defines (static inline)."""
    names = set()
    code = strip(header_text)
    code = re.sub(r"^\s*#.*(\\\n.*)*", " ", code, flags=re.M)
    for m in re.finditer(r"(?<![\w>.*])([a-z_][a-z0-9_]*)\s*\(", code):
        if m.group(1) not in KEYWORDS:
            names.add(m.group(1))
    return names


def scan(files):
    """Edges (from module, to module) -> [why], and problems found."""
    headers, owner, problems = {}, {}, []
    for path in files:
        if path.endswith(".h"):
            name = path.rsplit("/", 1)[-1]
            if name in headers:
                problems.append(f"two headers named {name}: "
                                f"{headers[name]} and {path}")
            headers[name] = path
            for fn in declared((REPO / path).read_text()):
                owner.setdefault(fn, module(path))
        elif path.endswith(".bpf.c"):
            # bpftool's skeleton of a BPF program (build/bpf/X.skel.h)
            # stands for the program's source.
            name = path.rsplit("/", 1)[-1][:-len(".bpf.c")] + ".skel.h"
            headers[name] = path
    edges = {}
    for path in files:
        text = (REPO / path).read_text()
        src = module(path)
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            target = headers.get(inc.rsplit("/", 1)[-1])
            if not target:
                problems.append(f'{path}: #include "{inc}" is no header '
                                f"of this program's layers")
            elif module(target) != src:
                edges.setdefault((src, module(target)), set()).add(
                    f'#include "{inc}"')
        code = strip(text)
        for m in re.finditer(r"(?<![\w>.])([a-z_][a-z0-9_]*)\s*\(", code):
            target = owner.get(m.group(1))
            if target and target != src:
                edges.setdefault((src, target), set()).add(m.group(1) + "()")
    return edges, problems


def sccs(nodes, succ):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check(layers, files, edges):
    layer_of = {module(p): files[p] for p in files}
    errors = []
    for (a, b), why in sorted(edges.items()):
        if layer_of[b] > layer_of[a]:
            errors.append(f"upward: {a} ({layers[layer_of[a]][0]}) -> {b} "
                          f"({layers[layer_of[b]][0]}): "
                          + ", ".join(sorted(why)))
    fsucc, msucc = {}, {}
    for (a, b) in edges:
        if folder(a) != folder(b):
            fsucc.setdefault(folder(a), set()).add(folder(b))
        else:
            msucc.setdefault(a, set()).add(b)
    for comp in sccs({folder(m) for m in layer_of}, fsucc):
        errors.append("cycle between folders: " + " <-> ".join(sorted(comp)))
    for comp in sccs(set(layer_of), msucc):
        if frozenset(comp) not in ALLOWED_CYCLES:
            errors.append("cycle between modules: "
                          + " <-> ".join(sorted(comp)) + " (edges: " +
                          "; ".join(f"{a}->{b}: {', '.join(sorted(w))}"
                                    for (a, b), w in sorted(edges.items())
                                    if a in comp and b in comp) + ")")
    return errors


def picture(layers, files, edges):
    calls = {}
    for (a, b) in edges:
        calls.setdefault(a, set()).add(b)
    by_layer = {}
    for p, i in files.items():
        by_layer.setdefault(i, set()).add(module(p))
    depth = {}

    def rank(m):
        """Above how many modules of its own folder M sits."""
        if m not in depth:
            depth[m] = 0
            depth[m] = 1 + max([rank(d) for d in calls.get(m, ())
                                if folder(d) == folder(m)], default=-1)
        return depth[m]

    for i in reversed(range(len(layers))):
        name, paths, what = layers[i]
        print(f"{i} {name:8} {' '.join(paths)}: {what}")
        for m in sorted(by_layer.get(i, ()), key=lambda m: (-rank(m), m)):
            deps = sorted(calls.get(m, ()))
            short = [d.rsplit("/", 1)[-1] for d in deps]
            print(f"    {m.rsplit('/', 1)[-1]:14} -> {' '.join(short) or '-'}")
    for comp, why in ALLOWED_CYCLES.items():
        print("allowed cycle:", " <-> ".join(sorted(comp)), "--", why)


def main(argv):
    global REPO
    if "--root" in argv:
        REPO = Path(argv[argv.index("--root") + 1])
    failed = False
    for program, layers in PROGRAMS:
        files = layer_files(layers)
        edges, problems = scan(files)
        if "--picture" in argv:
            print(f"{program}:")
            picture(layers, files, edges)
        errors = problems + check(layers, files, edges)
        for e in errors:
            print(f"layers: {program}: {e}", file=sys.stderr)
        failed |= bool(errors)
        if not errors and "--picture" not in argv:
            print(f"layers: {program}: {len(files)} files in {len(layers)} "
                  f"layers, {len(edges)} module dependencies, none upward, "
                  "no cycle")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
