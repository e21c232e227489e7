#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Check what generating the "dsmem" family's code does not guarantee.

    tests/spec_check.py [SPEC]

SPEC defaults to Documentation/netlink/specs/dsmem.yaml.  scripts/nlgen.py
generates the uAPI header, the kernel's policies and op table and
userspace's policies from it; this checks that those files are what the
spec generates, and what the generator does not read:

  definitions that live in other headers (linux/dsmem.h: feature bits and
  id limits; linux/dsmem_token.h, every enum, flag and constant of which
  must be a definition of the spec) have those headers' values;
  replies, events and notifications name attributes, sets, enums and
  groups that exist;
  the token cache's parameters (enum dsmem_cache_param, indexes nested as
  attribute type index + 1): the module's nested policy
  (dsmem_cache_param_nl_policy, generated into kernel/dsmem_nl_policy.c)
  takes types 1 .. DSMEM_CACHE_P_NR as the spec types them, and each parameter's checks (min, max) and doc
  (opening with its name in the module's table and saying its default)
  agree with that table (dstc_params in kernel/tokencache/dsmem_tc_core.c).

Output is TAP: "1..N", then "ok K - what" or "not ok K - what" with "# "
lines saying why; the exit status is 1 if any check failed.
"""

import ast
import os
import re
import subprocess
import sys
import traceback

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NL_HEADER = os.path.join(TOP, "include/uapi/linux/dsmem_netlink.h")
ABI_HEADER = os.path.join(TOP, "include/uapi/linux/dsmem.h")
DEFAULT_SPEC = os.path.join(TOP, "Documentation/netlink/specs/dsmem.yaml")
NLGEN = os.path.join(TOP, "scripts/nlgen.py")

# uapi enums of indexes (from 0) whose set nests index i as attribute type
# i + 1, with the entry that counts them, which must come last: the enum,
# its count, the module's table of the parameters and the files holding
# the table and the nested policy
INDEX_KEYED = {
    "dsmem_cache_param": {
        "count": "DSMEM_CACHE_P_NR",
        "table": "dstc_params",
        "table_file": "kernel/tokencache/dsmem_tc_core.c",
        "table_header": "kernel/tokencache/dsmem_tc_core.h",
        "policy": "dsmem_cache_param_nl_policy",
        "policy_file": "kernel/dsmem_nl_policy.c",
    },
}

# uapi headers besides dsmem_netlink.h whose every named enum and every
# object-like #define the spec's definitions must describe
DEFINITION_HEADERS = ("linux/dsmem_token.h",)

# spec attribute type -> kernel policy types that implement it
POLICY_TYPES = {
    "u8": {"NLA_U8"}, "u16": {"NLA_U16"}, "u32": {"NLA_U32"},
    "u64": {"NLA_U64"}, "s8": {"NLA_S8"}, "s16": {"NLA_S16"},
    "s32": {"NLA_S32"}, "s64": {"NLA_S64"}, "flag": {"NLA_FLAG"},
    "string": {"NLA_NUL_STRING", "NLA_STRING"},
    "binary": {"NLA_BINARY", "NLA_UNSPEC"},
    "nest": {"NLA_NESTED", "NLA_NESTED_ARRAY"},
    "bitfield32": {"NLA_BITFIELD32"},
}


class Tap:
    def __init__(self):
        self.results = []

    def check(self, ok, what, why=()):
        self.results.append((bool(ok), what, list(why)))
        return ok

    def finish(self):
        print("1..%d" % len(self.results))
        failed = 0
        for k, (ok, what, why) in enumerate(self.results, 1):
            print("%s %d - %s" % ("ok" if ok else "not ok", k, what))
            if not ok:
                failed += 1
                for line in why:
                    for part in str(line).splitlines() or [""]:
                        print("#   " + part)
        if failed:
            print("# %d of %d checks failed" % (failed, len(self.results)))
        return 1 if failed else 0


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_c_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def c_int(expr, known):
    """Value of a simple C constant expression, or None: a number, a known
    name, NAME +/- N, _BITULL(N), and such terms ORed in parentheses."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")") and \
            expr.count("(") == 1:
        expr = expr[1:-1].strip()
    if "|" in expr:
        vals = [c_int(t, known) for t in expr.split("|")]
        if None in vals:
            return None
        out = 0
        for v in vals:
            out |= v
        return out
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", expr)
    if m:
        return int(m.group(1), 0)
    m = re.fullmatch(r"_BITU?L*\(\s*(\d+)\s*\)", expr)
    if m:
        return 1 << int(m.group(1))
    if expr in known:
        return known[expr]
    m = re.fullmatch(r"(\w+)\s*([-+])\s*(\d+)", expr)
    if m and m.group(1) in known:
        a, b = known[m.group(1)], int(m.group(3))
        return a - b if m.group(2) == "-" else a + b
    return None


def parse_enums(text):
    """{enum name: [(ENTRY, value), ...]} for every named enum."""
    enums = {}
    for m in re.finditer(r"\benum\s+(\w+)\s*\{(.*?)\}\s*;", text, flags=re.S):
        entries, known, val = [], {}, 0
        for item in m.group(2).split(","):
            item = item.strip()
            if not item:
                continue
            name, _, expr = item.partition("=")
            name = name.strip()
            if expr:
                v = c_int(expr, known)
                val = v if v is not None else val
            known[name] = val
            entries.append((name, val))
            val += 1
        enums[m.group(1)] = entries
    return enums


def parse_defines(text):
    defs = {}
    for m in re.finditer(r"^#define\s+(\w+)[ \t]+([^\n]+)$", text, flags=re.M):
        defs[m.group(1)] = m.group(2).strip()
    return defs


def define_values(text):
    """{NAME: int} for every #define whose value c_int can compute."""
    known = {}
    for name, expr in parse_defines(text).items():
        v = c_int(expr, known)
        if v is not None:
            known[name] = v
    return known


def split_args(text):
    """Top-level comma-separated arguments of a macro call's inside."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    args.append(cur.strip())
    return args


def is_max(name, names):
    """The count and max entries that close an attribute enum: __X_MAX
    and the X_MAX defined next to it (not a parameter called BATCH_MAX)."""
    return name.startswith("__") or \
        (name.endswith("_MAX") and "__" + name in names)


def c_name(prefix, name):
    return (prefix + name).upper().replace("-", "_")


def balanced(text, start):
    """The text of the {...} block opening at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise ValueError("unbalanced braces")


def c_eval(expr, defs, depth=0):
    """Value of a C integer constant expression: numbers (with U, L
    suffixes), names defs maps to expressions or ints, BIT()/BIT_ULL(),
    + - * / << >> | and parentheses.  ValueError for anything else."""
    if isinstance(expr, int):
        return expr
    if depth > 16:
        raise ValueError("%r: macros nest too deep" % expr)
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr.strip())
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a // b,
           ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
           ast.BitOr: lambda a, b: a | b}

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.BinOp) and type(n.op) in ops:
            return ops[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.Name) and n.id in defs:
            return c_eval(defs[n.id], defs, depth + 1)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                n.func.id in ("BIT", "BIT_ULL") and len(n.args) == 1:
            return 1 << ev(n.args[0])
        raise ValueError("%r: cannot evaluate %s" % (expr, ast.dump(n)))

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise ValueError("%r: not an expression" % expr)
    return ev(tree.body)


def parse_param_table(text, table):
    """{designator: [arguments]} of the table's DSTC_PARAM(...) entries,
    e.g. "DSTC_P_WINDOW_NS": ["window", "1000", "60 * NS_PER_S", ...]."""
    m = re.search(r"\b%s\s*\[[^\]]*\]\s*=\s*\{" % re.escape(table), text)
    if not m:
        return None
    body = balanced(text, m.end() - 1)
    out = {}
    for e in re.finditer(r"\[\s*(\w+)\s*\]\s*=\s*\w+\s*\(", body):
        depth, i = 0, e.end() - 1
        for i in range(e.end() - 1, len(body)):
            depth += {"(": 1, ")": -1}.get(body[i], 0)
            if depth == 0:
                break
        out[e.group(1)] = split_args(body[e.end():i])
    return out


def duration_words(ns):
    """ns as the docs say it: "100 ms", "1 us", "5 ns"."""
    for unit, size in (("s", 10 ** 9), ("ms", 10 ** 6), ("us", 10 ** 3)):
        if ns and ns % size == 0:
            return "%d %s" % (ns // size, unit)
    return "%d ns" % ns


def main():
    spec_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SPEC
    tap = Tap()
    try:
        return run(spec_path, tap)
    except Exception:  # a malformed spec must fail as TAP, not as a crash
        tap.check(False, "the checks ran to completion",
                  traceback.format_exc().splitlines())
        return tap.finish()


def run(spec_path, tap):

    try:
        spec = yaml.safe_load(read(spec_path))
        nl_text = strip_c_comments(read(NL_HEADER))
        abi_text = strip_c_comments(read(ABI_HEADER))
    except (OSError, yaml.YAMLError) as e:
        tap.check(False, "spec and sources can be read", [str(e)])
        return tap.finish()

    why = []
    if not isinstance(spec, dict):
        why.append("the spec is not a mapping")
    else:
        for key in ("name", "doc", "attribute-sets", "operations"):
            if key not in spec:
                why.append("no %r" % key)
        if spec.get("protocol") != "genetlink-legacy":
            why.append("protocol is %r, not genetlink-legacy"
                       % spec.get("protocol"))
    if not tap.check(not why, "spec is a genetlink-legacy spec", why):
        return tap.finish()

    # the generated files: what the spec makes of them, not an edited copy
    gen = subprocess.run([sys.executable, NLGEN, "--check",
                          os.path.relpath(spec_path, TOP)],
                         capture_output=True, text=True, check=False)
    tap.check(gen.returncode == 0,
              "the generated netlink code is what scripts/nlgen.py makes of "
              "the spec", gen.stderr.splitlines())

    enums = parse_enums(nl_text)
    sets = {s["name"]: s for s in spec.get("attribute-sets", [])}
    op_list = spec["operations"].get("list", [])
    groups = [g["name"] for g in spec.get("mcast-groups", {}).get("list", [])]

    def compare(enum, entries, what, henums, count=None):
        """entries: [(C name, value)] of the spec; henums: the header's
        enums; count: the entry that counts the others, last and one more
        than the last of them."""
        why = []
        if enum not in henums:
            why.append("enum %s not found in the header" % enum)
        else:
            names = {n for n, _ in henums[enum]}
            hent = [(n, v) for n, v in henums[enum] if not is_max(n, names)]
            if count is not None:
                if not hent or hent[-1][0] != count:
                    why.append("%s is not the last entry of %s"
                               % (count, enum))
                else:
                    hent.pop()
                    last = hent[-1][1] if hent else -1
                    if henums[enum][-1][1] != last + 1:
                        why.append("%s is %d, not one more than the last "
                                   "entry (%d)" % (count, henums[enum][-1][1],
                                                   last))
            for i in range(max(len(hent), len(entries))):
                w = hent[i] if i < len(hent) else None
                g = entries[i] if i < len(entries) else None
                if w != g:
                    why.append("position %d: header %s, spec %s" % (
                        i, "%s = %d" % w if w else "(nothing)",
                        "%s = %d" % g if g else "(nothing)"))
        tap.check(not why, "%s: %s in the same order with the same values"
                  % (enum, what), why)

    # --- definitions of other headers: the generator renders only those
    # without a header; the rest must say what their headers say --------
    def header_of(d):
        """The header text (comments stripped) a definition lives in."""
        h = d["header"]
        return strip_c_comments(read(os.path.join(TOP, "include/uapi", h))), h

    defs = {d["name"]: d for d in spec.get("definitions", [])}
    external = [d for d in spec.get("definitions", []) if "header" in d]

    consts = {}
    why = []
    for d in external:
        if d.get("type") != "const":
            continue
        text, hname_ = header_of(d)
        cname = c_name(d.get("name-prefix", spec["name"] + "-"), d["name"])
        consts[cname] = hname_
        raw = parse_defines(text).get(cname)
        val = d.get("value")
        if raw is None:
            why.append("%s is not defined in %s" % (cname, hname_))
        elif isinstance(val, str):
            if raw != '"%s"' % val:
                why.append("%s is %s in %s, \"%s\" in the spec"
                           % (cname, raw, hname_, val))
        elif define_values(text).get(cname) != val:
            why.append("%s is %s in %s, %r in the spec"
                       % (cname, raw, hname_, val))
    tap.check(not why, "constants have the values of their headers", why)

    covered = {}    # header -> C names the definitions describe
    for d in external:
        if d.get("type") not in ("enum", "flags"):
            continue
        text, hname_ = header_of(d)
        prefix = d.get("name-prefix", "%s-%s-" % (spec["name"], d["name"]))
        got, val = [], d.get("value-start", 0)
        for e in d.get("entries", []):
            e = e if isinstance(e, dict) else {"name": e}
            val = e.get("value", val)
            got.append((c_name(prefix, e["name"]),
                        1 << val if d["type"] == "flags" else val))
            val += 1
        if d["type"] == "enum":
            enum = (d.get("enum-name") or
                    "%s-%s" % (spec["name"], d["name"])).replace("-", "_")
            covered.setdefault(hname_, set()).add(enum)
            cnt = d.get("enum-cnt-name")
            compare(enum, got, "enum %r" % d["name"], parse_enums(text),
                    count=c_name("", cnt) if cnt else None)
            continue
        covered.setdefault(hname_, set()).update(n for n, _ in got)
        if d.get("header") == "linux/dsmem.h":
            continue    # the feature bits, checked below
        # flags: one define per bit; a define of several bits is the mask
        # of them all
        why = []
        pfx = c_name(prefix, "")
        # constants sharing the prefix (DSMEM_TOKEN_VERSION) are checked
        # as constants
        hvals = {n: v for n, v in define_values(text).items()
                 if n.startswith(pfx) and n not in consts}
        hbits = {n: v for n, v in hvals.items() if v and not v & (v - 1)}
        full = 0
        for _, v in got:
            full |= v
        if sorted(hbits.items()) != sorted(got):
            why.append("spec %r, header %r" % (sorted(got),
                                              sorted(hbits.items())))
        for n, v in sorted(hvals.items()):
            if n not in hbits and v != full:
                why.append("%s is %#x, not the mask of every flag (%#x)"
                           % (n, v, full))
        tap.check(not why, "flags %r match %s* in %s" % (d["name"], pfx,
                                                        hname_), why)

    # every enum and object-like define of the other uapi headers is
    # described (function-like macros and include guards are not)
    why = []
    for h in DEFINITION_HEADERS:
        text = strip_c_comments(read(os.path.join(TOP, "include/uapi", h)))
        have = covered.get(h, set()) | {n for n, hh in consts.items()
                                        if hh == h}
        for e in sorted(parse_enums(text)):
            if e not in have:
                why.append("enum %s of %s is not a definition" % (e, h))
        for n in sorted(parse_defines(text)):
            if n not in have:
                why.append("%s of %s is no constant or flag of the spec"
                           % (n, h))
    tap.check(not why, "the spec defines every enum and define of %s"
              % ", ".join(DEFINITION_HEADERS), why)

    # --- references the generator does not follow: replies, events,
    # notifications ---------------------------------------------------------
    why = []

    def set_attrs(name):
        s = sets.get(name)
        if s is None:
            return None
        if "subset-of" in s:
            parent = sets.get(s["subset-of"])
            if parent is None:
                return None
            full = {a["name"]: a for a in parent["attributes"]}
            return {a["name"]: full.get(a["name"]) for a in s["attributes"]}
        return {a["name"]: a for a in s["attributes"]}

    for s in sets.values():
        attrs = set_attrs(s["name"])
        if attrs is None:
            why.append("set %r: subset-of %r does not exist"
                       % (s["name"], s.get("subset-of")))
            continue
        for a, d in attrs.items():
            if d is None:
                why.append("set %r: %r is not in %r"
                           % (s["name"], a, s["subset-of"]))
            elif d.get("type") == "nest" and \
                    d.get("nested-attributes") not in sets:
                why.append("set %r: %r nests unknown set %r"
                           % (s["name"], a, d.get("nested-attributes")))
            elif "enum" in d and d["enum"] not in defs:
                why.append("set %r: %r takes unknown enum %r"
                           % (s["name"], a, d["enum"]))
            elif d.get("enum-as-flags") and \
                    defs.get(d.get("enum"), {}).get("type") != "flags":
                why.append("set %r: %r is enum-as-flags of %r, not flags"
                           % (s["name"], a, d.get("enum")))
    by_op = {op["name"]: op for op in op_list}
    for op in op_list:
        aset = set_attrs(op.get("attribute-set", "")) or {}
        lists = []
        for kind in ("do", "dump"):
            for part in ("request", "reply"):
                lists.append(("%s %s" % (kind, part),
                              ((op.get(kind) or {}).get(part) or {})
                              .get("attributes", [])))
        lists.append(("event", (op.get("event") or {}).get("attributes", [])))
        for where, names in lists:
            for a in names:
                if a not in aset:
                    why.append("op %r %s: %r is not in set %r"
                               % (op["name"], where, a, op.get("attribute-set")))
        if "notify" in op and \
           "reply" not in (by_op.get(op["notify"], {}).get("do") or {}):
            why.append("op %r notifies like %r, which has no do reply"
                       % (op["name"], op["notify"]))
        if ("notify" in op or "event" in op) and op.get("mcgrp") not in groups:
            why.append("op %r: notification on unknown group %r"
                       % (op["name"], op.get("mcgrp")))
    tap.check(not why, "spec references resolve (sets, nests, ops, groups)",
              why)

    # --- sets keyed by index: the module's nested policy and table -----------
    for enum, keyed in INDEX_KEYED.items():
        match = None
        for s_ in sets.values():
            if "subset-of" not in s_ and \
               s_.get("enum-name", "").replace("-", "_") == enum:
                match = s_
        if not tap.check(match is not None, "a set is rendered as enum %s"
                         % enum):
            continue
        prefix = match.get("name-prefix", "")
        attrs = {c_name(prefix, a["name"]): a for a in match["attributes"]}
        count = dict(enums.get(enum, [])).get(keyed["count"])

        # the nested policy: POLICY[COUNT + 1] = { [1 ... COUNT] = { .type
        # = NLA_X } } or an entry [ENTRY + 1] = NLA_X... for each parameter
        why = []
        ptext = strip_c_comments(read(os.path.join(TOP, keyed["policy_file"])))
        body = re.search(r"\b%s\s*\[\s*%s\s*\+\s*1\s*\]\s*=\s*\{(.*?)\n\};"
                         % (re.escape(keyed["policy"]),
                            re.escape(keyed["count"])), ptext, re.S)
        body = body.group(1) if body else ""
        pol = re.search(r"\[\s*1\s*\.\.\.\s*%s\s*\]\s*=\s*\{\s*"
                        r"\.type\s*=\s*(NLA_\w+)" % re.escape(keyed["count"]),
                        body)
        if not body:
            why.append("no policy %s[%s + 1] in %s" % (
                keyed["policy"], keyed["count"], keyed["policy_file"]))
        for n, a in sorted(attrs.items()):
            if not body:
                break
            ent = pol or re.search(
                r"\[\s*%s\s*\+\s*1\s*\]\s*=\s*(?:\{\s*\.type\s*=\s*|"
                r"NLA_POLICY_\w+\(\s*)(NLA_\w+)" % re.escape(n), body)
            if not ent:
                why.append("%s (type %s + 1) is not in the policy" % (n, n))
            elif ent.group(1) not in POLICY_TYPES.get(a.get("type"), set()):
                why.append("%s is %s in the spec, %s in the policy"
                           % (n, a.get("type"), ent.group(1)))
        tap.check(not why, "set %r: the nested policy takes types 1 .. %s as "
                  "the spec types them" % (match["name"], keyed["count"]), why)

        # the table: names, ranges and defaults
        why = []
        core = strip_c_comments(read(os.path.join(TOP, keyed["table_file"])))
        core_h = strip_c_comments(read(os.path.join(TOP,
                                                    keyed["table_header"])))
        cdefs = dict(parse_defines(core_h))
        cdefs.update(parse_defines(core))
        for text in (nl_text, strip_c_comments(read(os.path.join(
                TOP, "include/uapi/linux/dsmem_token.h")))):
            for entries in parse_enums(text).values():
                cdefs.update(entries)
        table = parse_param_table(core, keyed["table"])
        if table is None:
            why.append("no table %s in %s" % (keyed["table"],
                                              keyed["table_file"]))
            table = {}
        seen = set()
        for desig, args in sorted(table.items()):
            # the designator is an alias of the uapi entry (DSTC_P_X)
            uname = desig
            while uname in cdefs and isinstance(cdefs[uname], str) and \
                    re.fullmatch(r"\w+", cdefs[uname]):
                uname = cdefs[uname]
            a = attrs.get(uname)
            if a is None:
                why.append("%s[%s] is no parameter of set %r"
                           % (keyed["table"], desig, match["name"]))
                continue
            seen.add(uname)
            if len(args) < 4:
                why.append("%s: %r is not name, min, max, default" % (desig,
                                                                      args))
                continue
            try:
                lo, hi, dflt = (c_eval(x, cdefs) for x in args[1:4])
            except ValueError as e:
                why.append("%s: %s" % (desig, e))
                continue
            name = args[0].strip('"')
            chk = a.get("checks", {})
            if chk.get("min", 0) != lo or chk.get("max") != hi:
                why.append("%s: checks min %r max %r, the table %d .. %d"
                           % (uname, chk.get("min", 0), chk.get("max"),
                              lo, hi))
            doc = " ".join(str(a.get("doc", "")).split())
            if not doc.startswith(name + ":"):
                why.append("%s: the doc does not open with %r, its name in "
                           "the table" % (uname, name + ":"))
            unit = args[4].strip('"') if len(args) > 4 else ""
            if "enum" in a:
                e = defs.get(a["enum"], {})
                words = [x["name"] if isinstance(x, dict) else x
                         for x in e.get("entries", [])]
                said = words[dflt] if 0 <= dflt < len(words) else str(dflt)
            elif unit == "ns":
                said = duration_words(dflt)
            else:
                said = str(dflt)
            if not re.search(r"\bdefault %s\b" % re.escape(said), doc):
                why.append("%s: the doc does not say \"default %s\""
                           % (uname, said))
        for n in sorted(set(attrs) - seen):
            why.append("%s has no entry in %s" % (n, keyed["table"]))
        if count is not None and len(table) != count:
            why.append("%s has %d entries, %s is %d"
                       % (keyed["table"], len(table), keyed["count"], count))
        tap.check(not why, "set %r: names, ranges and defaults are those of "
                  "%s" % (match["name"], keyed["table"]), why)

    # --- feature bits ---------------------------------------------------------
    why = []
    feats = [d for d in spec.get("definitions", []) if d.get("type") == "flags"
             and d.get("header") == "linux/dsmem.h"]
    hbits = {}
    for n, v in parse_defines(abi_text).items():
        m = re.fullmatch(r"_BITULL\((\d+)\)", v)
        if n.startswith("DSMEM_FEAT_") and m:
            hbits[n] = int(m.group(1))
    sbits = {}
    for d in feats:
        bit = d.get("value-start", 0)
        for e in d.get("entries", []):
            e = e if isinstance(e, dict) else {"name": e}
            bit = e.get("value", bit)
            sbits[c_name(d.get("name-prefix", ""), e["name"])] = bit
            bit += 1
    if not feats:
        why.append("no flags definition with header linux/dsmem.h")
    if sbits != hbits:
        why.append("spec %r, header %r" % (sorted(sbits.items()),
                                          sorted(hbits.items())))
    tap.check(not why, "feature flags match DSMEM_FEAT_* in dsmem.h", why)

    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
