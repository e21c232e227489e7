#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Check that the netlink spec of the "dsmem" family agrees with the code.

    tests/spec_check.py [SPEC]

SPEC defaults to Documentation/netlink/specs/dsmem.yaml.  The spec is
compared with include/uapi/linux/dsmem_netlink.h (commands, attributes and
the nested attribute sets, their types as the header's comments give them,
enums, permission flags, family name, version and multicast group),
include/uapi/linux/dsmem.h (feature bits), include/uapi/linux/dsmem_token.h
(every enum, flag and constant of it must be a definition of the spec, with
the header's values) and kernel/dsmem_netlink.c (which operations exist,
which need GENL_ADMIN_PERM, which attributes their policies accept; the
file's own macros are expanded first, so ops and policy entries may be
written with them).

Sets keyed by index: the token cache's parameters are an enum of indexes
(enum dsmem_cache_param, counted by DSMEM_CACHE_P_NR) nested as attributes
of type index + 1.  Their set's values must be the header's plus one, the
module's nested policy (kernel/tokencache/dsmem_tc_nl.c) must take types
1 .. count as the spec types them, and each parameter's checks (min, max)
and doc (opening with its name in the module's table and saying its
default) must agree with that table (dstc_params in
kernel/tokencache/dsmem_tc_core.c).

Output is TAP: "1..N", then "ok K - what" or "not ok K - what" with "# "
lines saying why; the exit status is 1 if any check failed.
"""

import ast
import os
import re
import sys
import traceback

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NL_HEADER = os.path.join(TOP, "include/uapi/linux/dsmem_netlink.h")
ABI_HEADER = os.path.join(TOP, "include/uapi/linux/dsmem.h")
KERNEL_NL = os.path.join(TOP, "kernel/dsmem_netlink.c")
DEFAULT_SPEC = os.path.join(TOP, "Documentation/netlink/specs/dsmem.yaml")

# uapi enums and how the spec names them: the commands, then one
# attribute set each
ENUMS = ("dsmem_cmd", "dsmem_attr", "dsmem_port_attr", "dsmem_stat_attr",
         "dsmem_rseg_attr", "dsmem_grant_attr", "dsmem_tier_attr",
         "dsmem_bench_attr", "dsmem_cache_param")

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
        "policy_file": "kernel/tokencache/dsmem_tc_nl.c",
    },
}

# uapi headers besides dsmem_netlink.h whose every named enum and every
# object-like #define the spec's definitions must describe
DEFINITION_HEADERS = ("linux/dsmem_token.h",)

# policy macros of <net/netlink.h> that take no type: all binary
BINARY_POLICY_MACROS = ("NLA_POLICY_MIN_LEN", "NLA_POLICY_MAX_LEN",
                        "NLA_POLICY_EXACT_LEN", "NLA_POLICY_EXACT_LEN_WARN")

# type words that open an attribute's comment in the uapi header
HEADER_TYPES = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
                "string", "binary", "nest", "flag")

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


def header_types(raw):
    """{ENTRY: type} from the comments of enum entries in the raw header,
    e.g. "DSMEM_ATTR_NODE_ID,	/* u32, 1 .. DSMEM_NODE_ID_MAX */"."""
    types = {}
    for m in re.finditer(r"^\s*(DSMEM_\w+)\s*(?:=[^,]*)?,\s*/\*\s*(\w+)",
                         raw, flags=re.M):
        if m.group(2) in HEADER_TYPES:
            types[m.group(1)] = m.group(2)
    return types


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


def expand_local_macros(text):
    """text (comments stripped) with the macros it #defines itself
    expanded, object-like and function-like (with ## pasting), and the
    #define lines removed.  Macros of included headers stay as they are."""
    text = re.sub(r"\\\n", " ", text)
    macros = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(([^)]*)\))?"
                         r"[ \t]*([^\n]*)$", text, flags=re.M):
        params = None
        if m.group(2) is not None:
            params = [p.strip() for p in m.group(3).split(",") if p.strip()]
        macros[m.group(1)] = (params, m.group(4).strip())
    text = re.sub(r"^[ \t]*#[ \t]*(define|undef)\b[^\n]*$", "", text,
                  flags=re.M)
    if not macros:
        return text
    word = re.compile(r"\b(%s)\b" % "|".join(map(re.escape, macros)))
    for _ in range(16):   # nesting depth; recursion is not expected
        out, pos, changed = [], 0, False
        for m in word.finditer(text):
            if m.start() < pos:
                continue
            params, body = macros[m.group(1)]
            if params is None:
                out.append(text[pos:m.start()])
                out.append(body)
                pos = m.end()
                changed = True
                continue
            rest = text[m.end():]
            lead = len(rest) - len(rest.lstrip())
            if not rest[lead:].startswith("("):
                continue
            start = m.end() + lead
            depth = 0
            for i in range(start, len(text)):
                if text[i] == "(":
                    depth += 1
                elif text[i] == ")":
                    depth -= 1
                    if depth == 0:
                        break
            args = split_args(text[start + 1:i])
            exp = body
            for p, a in zip(params, args):
                exp = re.sub(r"\b%s\b" % re.escape(p), lambda _m, a=a: a, exp)
            exp = re.sub(r"\s*##\s*", "", exp)
            out.append(text[pos:m.start()])
            out.append(exp)
            pos = i + 1
            changed = True
        out.append(text[pos:])
        text = "".join(out)
        if not changed:
            break
    return text


def is_max(name, names):
    """The count and max entries that close an attribute enum: __X_MAX
    and the X_MAX defined next to it (not a parameter called BATCH_MAX)."""
    return name.startswith("__") or \
        (name.endswith("_MAX") and "__" + name in names)


def c_name(prefix, name):
    return (prefix + name).upper().replace("-", "_")


def spec_values(entries):
    """[(name, value)] with the spec's implicit numbering: from 0 when the
    first entry is unspec, else from 1; an explicit value restarts it."""
    out = []
    val = 0 if entries and entries[0].get("name") == "unspec" else 1
    for e in entries:
        if "value" in e:
            val = e["value"]
        out.append((e["name"], val))
        val += 1
    return out


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


def top_level_blocks(body):
    """The {...} blocks directly inside body (which includes its braces)."""
    blocks, depth, start = [], 0, None
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
            if depth == 2:
                start = i
        elif ch == "}":
            if depth == 2:
                blocks.append(body[start:i + 1])
            depth -= 1
    return blocks


def parse_kernel(text):
    """ops: {CMD: {"doit", "dumpit", "admin", "policy"}}, policies:
    {name: {ATTR: NLA_TYPE}}, mcgrps: [define], family fields."""
    text = expand_local_macros(strip_c_comments(text))
    policies = {}
    binary = "|".join(BINARY_POLICY_MACROS)
    for m in re.finditer(r"struct\s+nla_policy\s+(\w+)\s*\[[^\]]*\]\s*=\s*\{",
                         text):
        body = balanced(text, m.end() - 1)
        entries = {}
        for e in re.finditer(r"\[\s*(\w+)\s*\]\s*=\s*"
                             r"(?:\{[^}]*?\.type\s*=\s*(NLA_\w+)"
                             r"|(NLA_POLICY_NESTED\w*)"
                             r"|(%s)\s*\("
                             r"|NLA_POLICY_\w+\(\s*(NLA_\w+))" % binary, body):
            entries[e.group(1)] = (
                e.group(2) or ("NLA_NESTED" if e.group(3) else None) or
                ("NLA_BINARY" if e.group(4) else None) or e.group(5))
        policies[m.group(1)] = entries

    ops = {}
    m = re.search(r"struct\s+genl_(?:small_)?ops\s+\w+\s*\[\]\s*=\s*\{", text)
    if m:
        for block in top_level_blocks(balanced(text, m.end() - 1)):
            cmd = re.search(r"\.cmd\s*=\s*(\w+)", block)
            if not cmd:
                continue
            flags = re.search(r"\.flags\s*=\s*([^,}]+)", block)
            policy = re.search(r"\.policy\s*=\s*(\w+)", block)
            ops[cmd.group(1)] = {
                "doit": bool(re.search(r"\.doit\s*=", block)),
                "dumpit": bool(re.search(r"\.dumpit\s*=", block)),
                "admin": bool(flags and re.search(r"\bGENL_ADMIN_PERM\b",
                                                  flags.group(1))),
                "policy": policy.group(1) if policy else None,
            }

    mcgrps = []
    m = re.search(r"struct\s+genl_multicast_group\s+\w+\s*\[\]\s*=\s*\{", text)
    if m:
        mcgrps = re.findall(r"\.name\s*=\s*(\w+)", balanced(text, m.end() - 1))

    family = {}
    m = re.search(r"struct\s+genl_family\s+\w+[^;=]*=\s*\{", text)
    if m:
        for f in re.finditer(r"\.(\w+)\s*=\s*([^,}]+)", balanced(text, m.end() - 1)):
            family[f.group(1)] = f.group(2).strip()
    return ops, policies, mcgrps, family


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
        kernel_text = read(KERNEL_NL)
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

    enums = parse_enums(nl_text)
    defines = parse_defines(nl_text)
    abi_defines = parse_defines(abi_text)
    sets = {s["name"]: s for s in spec.get("attribute-sets", [])}
    ops_spec = spec["operations"]
    op_list = ops_spec.get("list", [])
    groups = [g["name"] for g in spec.get("mcast-groups", {}).get("list", [])]

    # --- family identity --------------------------------------------------
    def define_string(name):
        v = defines.get(name, "")
        m = re.fullmatch(r'"([^"]*)"', v)
        return m.group(1) if m else None

    hname = define_string("DSMEM_GENL_NAME")
    tap.check(hname is not None and spec.get("name") == hname,
              "family name matches DSMEM_GENL_NAME",
              ["spec %r, header %r" % (spec.get("name"), hname)])

    hver = c_int(defines.get("DSMEM_GENL_VERSION", ""), {})
    sver = spec.get("version", 1)
    tap.check(hver is not None and sver == hver,
              "family version matches DSMEM_GENL_VERSION",
              ["spec %r, header %r" % (sver, hver)])

    why = []
    for key, want in (("c-family-name", "DSMEM_GENL_NAME"),
                      ("c-version-name", "DSMEM_GENL_VERSION")):
        if key in spec and c_name("", spec[key]) != want:
            why.append("%s %r does not name %s" % (key, spec[key], want))
    tap.check(not why, "c-family-name and c-version-name name the header's defines",
              why)

    hgrp = define_string("DSMEM_GENL_MCGRP_EVENTS")
    why = []
    if groups != [hgrp]:
        why.append("spec groups %r, header DSMEM_GENL_MCGRP_EVENTS %r"
                   % (groups, hgrp))
    for g in spec.get("mcast-groups", {}).get("list", []):
        if "c-define-name" in g and \
           c_name("", g["c-define-name"]) not in defines:
            why.append("c-define-name %r is not defined in the header"
                       % g["c-define-name"])
    tap.check(not why, "multicast groups match DSMEM_GENL_MCGRP_EVENTS", why)

    # --- enums ------------------------------------------------------------
    def compare(enum, prefix, entries, what, got=None, henums=None,
                offset=0, count=None):
        """got: [(C name, value)] when the spec's numbering is not that of
        an attribute set or ops list; henums: the header's enums; offset:
        what the spec adds to the header's values (sets keyed by index);
        count: the entry that counts the others, last and one more than
        the last of them."""
        henums = enums if henums is None else henums
        why = []
        if enum not in henums:
            why.append("enum %s not found in the header" % enum)
        elif prefix is None:
            why.append("no spec element is rendered as enum %s" % enum)
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
            want = [(n, v + offset) for n, v in hent]
            if got is None:
                got = [(c_name(prefix, n), v) for n, v in spec_values(entries)]
            for i in range(max(len(want), len(got))):
                w = want[i] if i < len(want) else None
                g = got[i] if i < len(got) else None
                if w != g:
                    why.append("position %d: header %s, spec %s" % (
                        i, "%s = %d" % w if w else "(nothing)",
                        "%s = %d" % g if g else "(nothing)"))
        tap.check(not why, "%s: %s in the same order with the same values"
                  % (enum, what), why)

    def enum_of(element, default_prefix):
        """(prefix, C enum name) of an ops list or attribute set."""
        prefix = element.get("name-prefix", default_prefix)
        name = element.get("enum-name")
        if name is None and prefix:
            name = prefix.rstrip("-")
        return prefix, (name or "").replace("-", "_")

    prefix, ename = enum_of(ops_spec, "%s-cmd-" % spec["name"])
    compare("dsmem_cmd", prefix if ename == "dsmem_cmd" else None, op_list,
            "operations")
    cmd_name = {n: c_name(prefix, n) for n, _ in spec_values(op_list)}

    for enum in ENUMS[1:]:
        match = None
        for s in sets.values():
            if "subset-of" in s:
                continue
            p, e = enum_of(s, "%s-%s-a-" % (spec["name"], s["name"]))
            if e == enum:
                match = (p, s)
        keyed = INDEX_KEYED.get(enum)
        compare(enum, match[0] if match else None,
                match[1]["attributes"] if match else [],
                "attribute set %r" % (match[1]["name"] if match else "?")
                + (", keyed by index + 1" if keyed else ""),
                offset=1 if keyed else 0,
                count=keyed["count"] if keyed else None)

    # --- definitions: enums and flags -----------------------------------------
    def header_of(d):
        """The header text (comments stripped) a definition lives in."""
        h = d.get("header", spec.get("uapi-header", "linux/dsmem_netlink.h"))
        return strip_c_comments(read(os.path.join(TOP, "include/uapi", h))), h

    defs = {d["name"]: d for d in spec.get("definitions", [])}

    # constants: each a #define of its header with the spec's value
    consts = {}
    why = []
    for d in spec.get("definitions", []):
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
    for d in spec.get("definitions", []):
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
            compare(enum, prefix, None, "enum %r" % d["name"], got=got,
                    henums=parse_enums(text),
                    count=c_name("", cnt) if cnt else None)
            continue
        covered.setdefault(hname_, set()).update(n for n, _ in got)
        if d.get("header") == "linux/dsmem.h":
            continue    # the feature bits, checked below
        # flags: one define per bit; a define of several bits is the mask
        # of them all (DSMEM_PERM_ALL)
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

    # --- attribute types as the header's comments give them -------------------
    why = []
    htypes = header_types(read(NL_HEADER))
    for s_ in sets.values():
        if "subset-of" in s_:
            continue
        p, _ = enum_of(s_, "%s-%s-a-" % (spec["name"], s_["name"]))
        for a in s_["attributes"]:
            h = htypes.get(c_name(p, a["name"]))
            if h is not None and h != a.get("type"):
                why.append("%s: %s in the header, %s in the spec"
                           % (c_name(p, a["name"]), h, a.get("type")))
    tap.check(not why, "attribute types are those the header's comments give",
              why)

    # --- internal consistency of the spec -----------------------------------
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
               enum_of(s_, "%s-%s-a-" % (spec["name"], s_["name"]))[1] == enum:
                match = s_
        if match is None:
            continue    # reported above
        prefix = match.get("name-prefix", "")
        attrs = {c_name(prefix, a["name"]): a for a in match["attributes"]}
        count = dict(enums.get(enum, [])).get(keyed["count"])

        # the nested policy: [1 ... COUNT] = { .type = NLA_X }
        why = []
        ptext = strip_c_comments(read(os.path.join(TOP, keyed["policy_file"])))
        pol = re.search(r"\[\s*1\s*\.\.\.\s*%s\s*\]\s*=\s*\{\s*"
                        r"\.type\s*=\s*(NLA_\w+)" % re.escape(keyed["count"]),
                        ptext)
        if not pol:
            why.append("no policy [1 ... %s] in %s" % (keyed["count"],
                                                        keyed["policy_file"]))
        else:
            for n, a in sorted(attrs.items()):
                if pol.group(1) not in POLICY_TYPES.get(a.get("type"), set()):
                    why.append("%s is %s in the spec, %s in the policy"
                               % (n, a.get("type"), pol.group(1)))
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

    # --- the kernel -------------------------------------------------------------
    kops, policies, kgroups, family = parse_kernel(kernel_text)
    tap.check(kops, "kernel/dsmem_netlink.c has a genl_ops array",
              ["no ops found"])

    spec_admin = {cmd_name[o["name"]] for o in op_list
                  if "admin-perm" in o.get("flags", [])}
    kern_admin = {c for c, o in kops.items() if o["admin"]}
    tap.check(spec_admin == kern_admin,
              "admin-perm in the spec is GENL_ADMIN_PERM in the kernel",
              ["only in the spec: %s" % sorted(spec_admin - kern_admin),
               "only in the kernel: %s" % sorted(kern_admin - spec_admin)])

    why = []
    for op in op_list:
        c = cmd_name[op["name"]]
        k = kops.get(c, {"doit": False, "dumpit": False})
        if ("do" in op) != k["doit"]:
            why.append("%s: spec %s do, kernel %s doit" % (
                c, "has" if "do" in op else "has no",
                "has" if k["doit"] else "has no"))
        if ("dump" in op) != k["dumpit"]:
            why.append("%s: spec %s dump, kernel %s dumpit" % (
                c, "has" if "dump" in op else "has no",
                "has" if k["dumpit"] else "has no"))
    for c in kops:
        if c not in cmd_name.values():
            why.append("%s: a kernel op the spec does not list" % c)
    tap.check(not why, "do/dump in the spec are the kernel's doit/dumpit", why)

    why = []
    for op in op_list:
        c = cmd_name[op["name"]]
        if c not in kops:
            continue
        s = sets.get(op.get("attribute-set"), {})
        sattrs = set_attrs(op.get("attribute-set", "")) or {}
        want = {}
        for kind in ("do", "dump"):
            for a in ((op.get(kind) or {}).get("request") or {}) \
                    .get("attributes", []):
                want[c_name(s.get("name-prefix", ""), a)] = \
                    (sattrs.get(a) or {}).get("type")
        pol = kops[c]["policy"]
        got = policies.get(pol, {}) if pol else {}
        if pol and pol not in policies:
            why.append("%s: policy %s not found" % (c, pol))
        for a in sorted(set(want) | set(got)):
            if a not in got:
                why.append("%s: spec request takes %s, the policy does not"
                           % (c, a))
            elif a not in want:
                why.append("%s: the policy takes %s, the spec request does not"
                           % (c, a))
            elif got[a] not in POLICY_TYPES.get(want[a], set()):
                why.append("%s: %s is %s in the spec, %s in the policy"
                           % (c, a, want[a], got[a]))
    tap.check(not why, "request attributes in the spec are the kernel policies",
              why)

    why = []
    resv = family.get("resv_start_op")
    cmd_values = dict(enums.get("dsmem_cmd", []))
    resv_val = c_int(resv or "", cmd_values)
    dont = [o["name"] for o in op_list if o.get("dont-validate")]
    if resv_val is None:
        why.append("no resv_start_op in the family (%r)" % resv)
    elif dont:
        why.append("the spec relaxes validation of %s" % dont)
    else:
        lax = [c for c in kops if cmd_values.get(c, -1) < resv_val]
        if lax:
            why.append("below resv_start_op %s, not strictly validated: %s"
                       % (resv, lax))
    tap.check(not why, "every operation is strictly validated, as the spec says",
              why)

    why = []
    kgroup_names = sorted(define_string(g) or g for g in kgroups)
    if kgroup_names != sorted(groups):
        why.append("kernel %r, spec %r" % (kgroup_names, groups))
    for field, want in (("name", "DSMEM_GENL_NAME"),
                        ("version", "DSMEM_GENL_VERSION")):
        if family.get(field) != want:
            why.append("genl_family .%s is %r, not %s"
                       % (field, family.get(field), want))
    tap.check(not why, "the kernel registers the spec's name, version and groups",
              why)

    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
