#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Generate the "dsmem" netlink family's code from its spec.

    scripts/nlgen.py [--check] [SPEC]

From Documentation/netlink/specs/dsmem.yaml this writes, in the manner of
the kernel's tools/net/ynl/ynl-gen-c.py (which Linux 6.1 does not ship):

  include/uapi/linux/dsmem_netlink.h  the uAPI: family defines, commands,
                                      attribute sets, enums, flags, consts
                                      and structs of the spec
  kernel/dsmem_nl_gen.h, .c           the per-op policies, the policies
                                      of the attribute sets requests nest
                                      (declared, for nla_parse_nested),
                                      the op table, the multicast groups
                                      and the family; the handlers are
                                      declared here and defined in the
                                      hand-written files
  user/lib/nl_gen.h, .c               libnl attribute policies of every
                                      attribute set, for the codec

--check writes nothing and exits 1 when a file differs from what the spec
generates (a stale or hand-edited file).

What the spec says beyond ynl's genetlink-legacy schema:
  checks        a value is a number, the name of a const definition, a C
                name of the uAPI or a C expression of the kernel's (bounds
                that follow its configuration, e.g. MAX_NUMNODES - 1).
                Bounds take NLA_POLICY_RANGE/MIN/MAX, or a full range
                when one does not fit the policy's s16 or, unsigned, has
                no value the spec knows; a signed expression is taken to
                fit (the compiler refuses an overflow).  A string
                or binary with only max-len is { .len = max-len }.
  kernel-checks of an attribute set: "handler" when the kernel's handler,
                not its policy, enforces the checks of the set's attributes
                (to name the value out of range, or check them as a
                whole); the set's kernel policy then takes their types
                only.  The default, "policy", renders them as above.
  uapi-offset   of an attribute set: the header numbers its attributes
                this much lower than their types (indexes nested as
                index + 1); attr-cnt-name then counts them.
  mask-name     of a flags definition: a define of all its bits.
  kernel-family netnsok, parallel-ops and the headers the kernel's
                policies need.
Definitions with a header live in that header and are not rendered.
"""

import argparse
import os
import re
import sys
import textwrap

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SPEC = "Documentation/netlink/specs/dsmem.yaml"

SCALAR_WIDTH = {"u8": 1, "u16": 2, "u32": 4, "u64": 8,
                "s8": 1, "s16": 2, "s32": 4, "s64": 8}
S16_MIN, S16_MAX = -(1 << 15), (1 << 15) - 1


def c_name(*parts):
    return "".join(parts).upper().replace("-", "_")


def c_lower(*parts):
    return "".join(parts).lower().replace("-", "_")


def comment_block(text, indent=""):
    """A kernel-style block comment of a doc string, or nothing."""
    if not text:
        return []
    paras = [" ".join(p.split()) for p in str(text).strip().split("\n\n")]
    lines = [indent + "/*"]
    for i, p in enumerate(paras):
        if i:
            lines.append(indent + " *")
        for w in textwrap.wrap(p, 72 - len(indent)):
            lines.append(indent + " * " + w)
    lines.append(indent + " */")
    return lines


def tabbed(left, right, col=40):
    """left, then tabs to column col (tabs of 8), then right."""
    pad = max(1, (col - len(left.expandtabs()) + 7) // 8)
    return left + "\t" * pad + right


class Family:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec["name"]
        self.prefix = self.name + "-"
        self.defs = {d["name"]: d for d in spec.get("definitions", [])}
        self.sets = {s["name"]: s for s in spec["attribute-sets"]}
        self.ops = spec["operations"]["list"]
        self.groups = spec.get("mcast-groups", {}).get("list", [])
        self.kfam = spec.get("kernel-family", {})
        self.values = {}        # C name -> value, of what the spec defines
        self._number_definitions()
        self.set_values = {n: self._number_set(s)
                           for n, s in self.sets.items() if "subset-of" not in s}

    # --- naming ----------------------------------------------------------
    def def_prefix(self, d):
        return d.get("name-prefix", "%s%s-" % (self.prefix, d["name"]))

    def def_c(self, d):
        if d["type"] == "const":
            return c_name(d.get("name-prefix", self.prefix), d["name"])
        return c_lower(d.get("enum-name") or "%s%s" % (self.prefix, d["name"]))

    def set_prefix(self, s):
        return s.get("name-prefix", "%s%s-a-" % (self.prefix, s["name"]))

    def set_root(self, s):
        return self.sets[s["subset-of"]] if "subset-of" in s else s

    def attr(self, s, name):
        for a in self.set_root(s)["attributes"]:
            if a["name"] == name:
                return a
        raise SystemExit("nlgen: set %r has no attribute %r" % (s["name"], name))

    def attr_c(self, s, name):
        s = self.set_root(s)
        return c_name(self.set_prefix(s), name)

    def attr_index(self, s, name):
        """The C expression of an attribute's type: its enum entry, plus
        the set's uapi-offset."""
        s = self.set_root(s)
        off = s.get("uapi-offset", 0)
        return self.attr_c(s, name) + (" + %d" % off if off else "")

    def set_max(self, s):
        """The C expression of a set's highest attribute type."""
        s = self.set_root(s)
        if "attr-max-name" in s:
            return c_name(s["attr-max-name"])
        return c_name(s["attr-cnt-name"])      # offset sets: count == max

    def cmd_c(self, op):
        return c_name(self.spec["operations"].get("name-prefix",
                                                  self.prefix + "cmd-"),
                      op["name"])

    def group_c(self, g):
        return c_name(g.get("c-define-name",
                            "%sgenl-mcgrp-%s" % (self.prefix, g["name"])))

    # --- values ----------------------------------------------------------
    def _number_definitions(self):
        for d in self.defs.values():
            if d["type"] == "const":
                if isinstance(d["value"], int):
                    self.values[self.def_c(d)] = d["value"]
                continue
            if d["type"] not in ("enum", "flags"):
                continue
            val = d.get("value-start", 0)
            for e in self.entries(d):
                val = e.get("value", val)
                self.values[c_name(self.def_prefix(d), e["name"])] = \
                    1 << val if d["type"] == "flags" else val
                val += 1
            if d.get("enum-cnt-name"):
                self.values[c_name(d["enum-cnt-name"])] = val
            if d.get("mask-name"):
                self.values[c_name(d["mask-name"])] = \
                    (1 << val) - (1 << d.get("value-start", 0))

    def _number_set(self, s):
        out, val = [], 0
        for a in s["attributes"]:
            val = a.get("value", val)
            out.append((a["name"], val))
            val += 1
        return out

    @staticmethod
    def entries(d):
        return [e if isinstance(e, dict) else {"name": e}
                for e in d.get("entries", [])]

    def check_value(self, v):
        """(C expression, value or None) of a check's bound."""
        if isinstance(v, int):
            big = v > 0x7fffffff or v < -0x80000000
            return ("%dULL" % v if big and v > 0 else str(v)), v
        v = str(v)
        d = self.defs.get(v)
        if d is not None and d["type"] == "const":
            return self.def_c(d), d.get("value")
        expr = v
        for n in sorted(self.values, key=len, reverse=True):
            expr = re.sub(r"\b%s\b" % n, str(self.values[n]), expr)
        if re.fullmatch(r"[-+*() 0-9xXa-fA-F]+", expr):
            try:
                return v, int(eval(expr, {"__builtins__": {}}))  # noqa: S307
            except (SyntaxError, NameError, TypeError):
                pass
        return v, None


# --- the uAPI header --------------------------------------------------------

def banner(spec_path, comment="/*"):
    what = "generated by scripts/nlgen.py from %s, do not edit" % \
        os.path.basename(spec_path)
    if comment == "//":
        return ["// " + what]
    return ["/* " + what + " */"]


def render_uapi(fam, spec_path):
    s = fam.spec
    guard = "_UAPI_LINUX_%s_NETLINK_H" % c_name(fam.name)
    out = ["/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) "
           "OR BSD-2-Clause) */"]
    out += banner(spec_path)
    out += comment_block("The generic netlink family \"%s\"; its spec, %s, "
                         "documents every command and attribute."
                         % (fam.name, DEFAULT_SPEC))
    out += ["#ifndef " + guard, "#define " + guard, "",
        "#include <linux/types.h>", ""]
    out.append(tabbed("#define " + c_name(s["c-family-name"]),
                      '"%s"' % fam.name, 32))
    out.append(tabbed("#define " + c_name(s["c-version-name"]),
                      str(s.get("version", 1)), 32))
    for g in fam.groups:
        out.append(tabbed("#define " + fam.group_c(g), '"%s"' % g["name"], 32))
    out.append("")

    for d in s.get("definitions", []):
        if "header" in d:
            continue
        out += comment_block(d.get("doc"))
        if d["type"] == "const":
            v = d["value"]
            out.append(tabbed("#define " + fam.def_c(d),
                              '"%s"' % v if isinstance(v, str) else str(v)))
        elif d["type"] == "flags":
            pfx = fam.def_prefix(d)
            names = []
            for e in fam.entries(d):
                n = c_name(pfx, e["name"])
                names.append(n)
                out.append(tabbed("#define " + n, "%#04x" % fam.values[n]))
            if d.get("mask-name"):
                out.append(tabbed("#define " + c_name(d["mask-name"]),
                                  "(%s)" % " | ".join(names)))
        elif d["type"] == "enum":
            out.append("enum %s {" % fam.def_c(d))
            val, implicit = d.get("value-start", 0), 0
            for e in fam.entries(d):
                n = c_name(fam.def_prefix(d), e["name"])
                val = e.get("value", val)
                out.append("\t%s," % n if val == implicit
                           else "\t%s = %d," % (n, val))
                val += 1
                implicit = val
            if d.get("enum-cnt-name"):
                out += ["", "\t%s" % c_name(d["enum-cnt-name"])]
            out.append("};")
        elif d["type"] == "struct":
            out.append("struct %s {" % fam.def_c(d))
            for m in d["members"]:
                if m["type"] == "pad":
                    n = m.get("len", 1)
                    if n in (1, 2, 4, 8):
                        out.append("\t__u%d __pad;" % (8 * n))
                    else:
                        out.append("\t__u8 __pad[%d];" % n)
                    continue
                line = "\t__%s %s;" % (m["type"], c_lower(m["name"]))
                if "enum" in m:
                    line = tabbed(line, "/* enum %s */" % fam.def_c(
                        fam.defs[m["enum"]]), 24)
                out.append(line)
            out.append("};")
        out.append("")

    # the commands
    ops = s["operations"]
    out.append("enum %s {" % c_lower(ops.get("enum-name", fam.prefix + "cmd")))
    val = 0
    for op in fam.ops:
        explicit = op.get("value", val) != val
        val = op.get("value", val)
        out.append("\t%s = %d," % (fam.cmd_c(op), val) if explicit
                   else "\t%s," % fam.cmd_c(op))
        val += 1
    cnt = "__" + c_name(ops.get("name-prefix", fam.prefix + "cmd-")) + "MAX"
    out += ["", "\t%s," % cnt,
            "\t%s = %s - 1" % (cnt[2:], cnt), "};", ""]

    # the attribute sets
    for aset in s["attribute-sets"]:
        if "subset-of" in aset:
            continue
        out += comment_block(aset.get("doc"))
        out.append("enum %s {" % c_lower(aset.get("enum-name",
                                                  fam.set_prefix(aset))))
        off = aset.get("uapi-offset", 0)
        implicit = 0        # the value C gives the next entry
        for a, v in fam.set_values[aset["name"]]:
            attr = fam.attr(aset, a)
            n = fam.attr_c(aset, a)
            hv = v - off
            left = "\t%s," % n if hv == implicit else "\t%s = %d," % (n, hv)
            implicit = hv + 1
            t = attr["type"]
            if t in ("unused", "pad"):
                out.append(left)
                continue
            what = t
            if "enum" in attr:
                e = fam.defs[attr["enum"]]
                if e["type"] == "flags":
                    what += ", %s*" % c_name(fam.def_prefix(e))
                else:
                    what += ", enum %s" % fam.def_c(e)
            if "nested-attributes" in attr:
                nest = fam.sets[attr["nested-attributes"]]
                if "subset-of" in nest:
                    what += " of %s" % ", ".join(
                        fam.attr_c(nest, x["name"]) for x in nest["attributes"])
                else:
                    what += ", enum %s" % c_lower(nest.get(
                        "enum-name", fam.set_prefix(nest)))
            out.append(tabbed(left, "/* %s */" % what, 48))
        out.append("")
        if "attr-cnt-name" in aset:
            cnt = c_name(aset["attr-cnt-name"])
            if "attr-max-name" in aset:
                out += ["\t%s," % cnt, "\t%s = %s - 1" % (
                    c_name(aset["attr-max-name"]), cnt)]
            else:
                out.append("\t%s" % cnt)
        out += ["};", ""]
    out.append("#endif /* %s */" % guard)
    return "\n".join(out) + "\n"


# --- kernel policies --------------------------------------------------------

def kernel_policy_entry(fam, aset, name, ranges):
    """The policy initializer of one attribute; ranges collects the
    netlink_range_validation structs it needs."""
    a = fam.attr(aset, name)
    t = a["type"]
    chk = a.get("checks", {})
    if kernel_checks(fam, aset) == "handler":
        chk = {}
    if t in SCALAR_WIDTH:
        nla = "NLA_" + t.upper()
        lo = fam.check_value(chk["min"]) if "min" in chk else None
        hi = fam.check_value(chk["max"]) if "max" in chk else None
        return range_policy(fam, name, nla, lo, hi, ranges)
    if t == "flag":
        return "{ .type = NLA_FLAG }"
    if t == "nest":
        if "nested-attributes" in a:
            return "NLA_POLICY_NESTED(%s)" % nested_policy_name(
                fam, fam.sets[a["nested-attributes"]])
        return "{ .type = NLA_NESTED }"
    if t == "string":
        ml = fam.check_value(chk["max-len"])[0] if "max-len" in chk else None
        return "{ .type = NLA_NUL_STRING%s }" % (
            ", .len = %s" % ml if ml else "")
    if t == "binary":
        lo = fam.check_value(chk["min-len"]) if "min-len" in chk else None
        hi = fam.check_value(chk["max-len"]) if "max-len" in chk else None
        if lo and hi:
            return range_policy(fam, name, "NLA_BINARY", lo, hi, ranges)
        if lo:
            return "NLA_POLICY_MIN_LEN(%s)" % lo[0]
        if hi:
            return "{ .type = NLA_BINARY, .len = %s }" % hi[0]
        return "{ .type = NLA_BINARY }"
    raise SystemExit("nlgen: %s: no kernel policy for type %s" % (name, t))


def fits_s16(b, nla):
    """Whether a bound fits the s16 of NLA_POLICY_RANGE/MIN/MAX.  A bound
    of unknown value takes the full range where there is one (unsigned
    and binary); a signed one is taken to fit, which the compiler checks."""
    if b is None:
        return True
    if b[1] is None:
        return nla.startswith("NLA_S")
    return S16_MIN <= b[1] <= S16_MAX


def range_policy(fam, name, nla, lo, hi, ranges):
    if lo is None and hi is None:
        return "{ .type = %s }" % nla
    if fits_s16(lo, nla) and fits_s16(hi, nla):
        if lo and hi:
            return "NLA_POLICY_RANGE(%s, %s, %s)" % (nla, lo[0], hi[0])
        if lo:
            return "NLA_POLICY_MIN(%s, %s)" % (nla, lo[0])
        return "NLA_POLICY_MAX(%s, %s)" % (nla, hi[0])
    if not (lo and hi):
        raise SystemExit("nlgen: %s: a one-sided bound beyond s16" % name)
    if nla.startswith("NLA_S"):
        raise SystemExit("nlgen: %s: a signed range beyond s16" % name)
    # one struct per distinct range, named after its first attribute
    rname = ranges.setdefault((lo[0], hi[0]), "%s_%s_range" % (
        c_lower(fam.name), c_lower(name)))
    return "NLA_POLICY_FULL_RANGE(%s, &%s)" % (nla, rname)


def kernel_checks(fam, aset):
    """Who enforces a set's checks in the kernel: "policy" or "handler"."""
    how = fam.set_root(aset).get("kernel-checks", "policy")
    if how not in ("policy", "handler"):
        raise SystemExit("nlgen: set %s: kernel-checks is policy or handler, "
                         "not %r" % (aset["name"], how))
    return how


def nested_policy_name(fam, aset):
    return "%s_%s_nl_policy" % (c_lower(fam.name), c_lower(aset["name"]))


def kernel_set_max(fam, aset):
    """The C expression of a nested set's highest attribute type in its
    kernel policy."""
    root = fam.set_root(aset)
    if "subset-of" not in aset and ("attr-max-name" in root or
                                    "uapi-offset" in root):
        return fam.set_max(root)
    order = dict(fam.set_values[root["name"]])
    last = max((a["name"] for a in aset["attributes"]),
               key=lambda n: order[n])
    return fam.attr_index(aset, last)


def kernel_set_attrs(fam, aset):
    """The attributes a nested set's kernel policy takes: all but the
    unused and pad ones, which stay NLA_UNSPEC (refused by strict
    validation, as in the per-op policies)."""
    return [a["name"] for a in aset["attributes"]
            if fam.attr(aset, a["name"])["type"] not in ("unused", "pad")]


def kernel_nested_sets(fam, policies):
    """[set] of every attribute set a request nests, through the per-op
    policies' nest attributes and, in turn, the nests of those sets; a set
    comes after the sets it nests, so that its policy can name theirs."""
    out, seen = [], set()

    def visit(aset, names):
        for n in names:
            a = fam.attr(aset, n)
            if a["type"] != "nest" or "nested-attributes" not in a:
                continue
            sub = fam.sets[a["nested-attributes"]]
            if sub["name"] in seen:
                continue
            seen.add(sub["name"])
            visit(sub, kernel_set_attrs(fam, sub))
            out.append(sub)

    for aset, attrs in policies.values():
        visit(aset, attrs)
    return out


def op_request_attrs(op):
    names = []
    for kind in ("do", "dump"):
        for a in ((op.get(kind) or {}).get("request") or {}).get(
                "attributes", []):
            if a not in names:
                names.append(a)
    return names


def handlers(fam, op):
    """[(member, function)] of an op's kernel handlers."""
    base = "%s_nl_%s" % (c_lower(fam.name), c_lower(op["name"]))
    has_do, has_dump = "do" in op, "dump" in op
    if has_do and has_dump:
        return [("doit", base + "_doit"), ("dumpit", base + "_dumpit")]
    if has_do:
        return [("doit", base)]
    if has_dump:
        return [("dumpit", base)]
    return []


def kernel_ops(fam):
    """[(op, policy name or None, attrs)], and {policy name: attrs}: one
    policy per distinct request, named after its first op."""
    policies, by_attrs, out = {}, {}, []
    for op in fam.ops:
        if not handlers(fam, op):
            continue
        aset = fam.sets[op.get("attribute-set", fam.name)]
        attrs = op_request_attrs(op)
        if not attrs:
            out.append((op, None, aset))
            continue
        order = dict(fam.set_values[fam.set_root(aset)["name"]])
        attrs = sorted(attrs, key=lambda n: order[n])
        key = (aset["name"], tuple(attrs))
        if key not in by_attrs:
            pname = "%s_%s_nl_policy" % (c_lower(fam.name), c_lower(op["name"]))
            by_attrs[key] = pname
            policies[pname] = (aset, attrs)
        out.append((op, by_attrs[key], aset))
    return out, policies


def render_kernel_h(fam, spec_path):
    lname = c_lower(fam.name)
    guard = "_%s_NL_GEN_H" % c_name(fam.name)
    out = ["/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */"]
    out += banner(spec_path)
    out += ["#ifndef " + guard, "#define " + guard, "",
            "#include <net/genetlink.h>", "",
            "#include <uapi/linux/%s_netlink.h>" % lname, "",
            "enum %s_nl_mcgrp {" % lname]
    for g in fam.groups:
        out.append("\t%s_NL_MCGRP_%s," % (c_name(fam.name), c_name(g["name"])))
    out += ["};", "", "extern struct genl_family %s_nl_family;" % lname, ""]
    nested = kernel_nested_sets(fam, kernel_ops(fam)[1])
    if nested:
        out.append("/* the policies of the attribute sets requests nest */")
        for aset in nested:
            out.append("extern const struct nla_policy %s[%s + 1];" % (
                nested_policy_name(fam, aset), kernel_set_max(fam, aset)))
        out.append("")
    for op in fam.ops:
        for member, fn in handlers(fam, op):
            if member == "doit":
                out.append("int %s(struct sk_buff *skb, struct genl_info *info);"
                           % fn)
            else:
                decl = "int %s(struct sk_buff *skb, " % fn
                if len(decl) + len("struct netlink_callback *cb);") > 80:
                    out += [decl.rstrip(), "\t" * ((len(decl) - 1) // 8) +
                            " " * ((len(decl) - 1) % 8) +
                            "struct netlink_callback *cb);"]
                else:
                    out.append(decl + "struct netlink_callback *cb);")
    out += ["", "#endif /* %s */" % guard]
    return "\n".join(out) + "\n"


def kernel_includes(fam, lname):
    out = []
    for h in fam.kfam.get("headers", []):
        system = h.split("/")[0] in ("linux", "net", "rdma", "uapi")
        out.append("#include <%s>" % h if system else '#include "%s"' % h)
    return out + ['#include "%s_nl_gen.h"' % lname, ""]


def render_policies(fam, todo):
    """The range validations and policy tables of todo's
    (name, storage, set, attrs, maxattr), as C lines."""
    ranges, bodies = {}, []
    for pname, storage, aset, attrs, maxattr in todo:
        body = ["%s struct nla_policy %s[%s + 1] = {" % (storage, pname,
                                                        maxattr)]
        for a in attrs:
            ent = kernel_policy_entry(fam, aset, a, ranges)
            line = "\t[%s] = %s," % (fam.attr_index(aset, a), ent)
            if len(line.expandtabs()) > 80 and ent.startswith("{"):
                line = "\t[%s] = {\n\t\t%s,\n\t}," % (
                    fam.attr_index(aset, a), ent[1:-1].strip())
            elif len(line.expandtabs()) > 80:
                line = "\t[%s] =\n\t\t%s," % (fam.attr_index(aset, a), ent)
            body.append(line)
        body += ["};", ""]
        bodies += body
    out = []
    for (lo, hi), rname in ranges.items():
        out += ["static struct netlink_range_validation %s = {" % rname,
                "\t.min = %s," % lo, "\t.max = %s," % hi, "};", ""]
    return out + bodies


def render_kernel_policy_c(fam, spec_path):
    """The policies of the attribute sets requests nest: netlink plumbing,
    which the handlers of every layer parse their nests with, apart from
    the op table, which names the handlers."""
    lname = c_lower(fam.name)
    policies = kernel_ops(fam)[1]
    out = ["// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause"]
    out += banner(spec_path, "//")
    out.append("")
    out += kernel_includes(fam, lname)
    todo = [(nested_policy_name(fam, s), "const", s, kernel_set_attrs(fam, s),
             kernel_set_max(fam, s))
            for s in kernel_nested_sets(fam, policies)]
    clash = {n for n, *_ in todo} & set(policies)
    if clash:
        raise SystemExit("nlgen: policy names of a set and an op clash: %s"
                         % ", ".join(sorted(clash)))
    out += render_policies(fam, todo)
    return "\n".join(out).rstrip("\n") + "\n"


def render_kernel_c(fam, spec_path):
    lname = c_lower(fam.name)
    ops, policies = kernel_ops(fam)
    out = ["// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause"]
    out += banner(spec_path, "//")
    out.append("")
    out += kernel_includes(fam, lname)
    # the per-op policies; they name the nested sets' (dsmem_nl_policy.c)
    out += render_policies(fam, [(pname, "static const", aset, attrs,
                                  fam.attr_index(aset, attrs[-1]))
                                 for pname, (aset, attrs) in policies.items()])

    out.append("static const struct genl_ops %s_nl_ops[] = {" % lname)
    for op, pname, _ in ops:
        out += ["\t{", "\t\t.cmd\t= %s," % fam.cmd_c(op)]
        for member, fn in handlers(fam, op):
            out.append("\t\t.%s\t= %s," % (member, fn))
        if pname:
            out.append("\t\t.policy\t= %s," % pname)
            out.append("\t\t.maxattr = ARRAY_SIZE(%s) - 1," % pname)
        flags = []
        for f in op.get("flags", []):
            flags.append({"admin-perm": "GENL_ADMIN_PERM",
                          "uns-admin-perm": "GENL_UNS_ADMIN_PERM"}[f])
        if flags:
            out.append("\t\t.flags\t= %s," % " | ".join(flags))
        out.append("\t},")
    out += ["};", ""]

    out.append("static const struct genl_multicast_group %s_nl_mcgrps[] = {"
               % lname)
    for g in fam.groups:
        gflags = " | ".join({"cap-net-admin": "GENL_MCAST_CAP_NET_ADMIN",
                             "cap-sys-admin": "GENL_MCAST_CAP_SYS_ADMIN"}[f]
                            for f in g.get("flags", []))
        out.append("\t[%s_NL_MCGRP_%s] = {" % (c_name(fam.name), c_name(g["name"])))
        out.append("\t\t.name = %s," % fam.group_c(g))
        if gflags:
            out.append("\t\t.flags = %s," % gflags)
        out.append("\t},")
    out += ["};", ""]

    first = ops[0][0]
    s = fam.spec
    out += ["struct genl_family %s_nl_family __ro_after_init = {" % lname,
            "\t.name\t\t= %s," % c_name(s["c-family-name"]),
            "\t.version\t= %s," % c_name(s["c-version-name"]),
            "\t.maxattr\t= %s," % fam.set_max(fam.sets[fam.name])]
    if fam.kfam.get("netnsok"):
        out += ["\t/* each namespace sees the objects it may use */",
                "\t.netnsok\t= true,"]
    if fam.kfam.get("parallel-ops"):
        out.append("\t.parallel_ops\t= true,")
    out += ["\t.module\t\t= THIS_MODULE,",
            "\t.ops\t\t= %s_nl_ops," % lname,
            "\t.n_ops\t\t= ARRAY_SIZE(%s_nl_ops)," % lname,
            "\t/* strict validation of every op: none is below the first */",
            "\t.resv_start_op\t= %s," % fam.cmd_c(first),
            "\t.mcgrps\t\t= %s_nl_mcgrps," % lname,
            "\t.n_mcgrps\t= ARRAY_SIZE(%s_nl_mcgrps)," % lname,
            "};"]
    return "\n".join(out) + "\n"


# --- userspace policies -----------------------------------------------------

def user_sets(fam):
    return [s for s in fam.spec["attribute-sets"] if "subset-of" not in s]


def user_policy_name(fam, s):
    return "ds_nl_%s_policy" % c_lower(s["name"])


def render_user_h(fam, spec_path):
    out = ["/* SPDX-License-Identifier: BSD-2-Clause */"]
    out += banner(spec_path)
    out += ["/*",
            " * libnl policies of the family's attribute sets: the type of",
            " * each attribute and, for fixed-width ones, minlen == maxlen ==",
            " * the width (libnl checks only the minimum; the codec checks",
            " * the rest).  Binary attributes are checked where used.",
            " */",
            "#ifndef DS_NL_GEN_H", "#define DS_NL_GEN_H", "",
            "#include <netlink/attr.h>",
            "#include <linux/%s_netlink.h>" % c_lower(fam.name), "",
            "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    for s in user_sets(fam):
        out.append("extern const struct nla_policy %s[%s + 1];" % (
            user_policy_name(fam, s), fam.set_max(s)))
    out += ["", "#ifdef __cplusplus", "}", "#endif", "",
            "#endif /* DS_NL_GEN_H */"]
    return "\n".join(out) + "\n"


def render_user_c(fam, spec_path):
    out = ["// SPDX-License-Identifier: BSD-2-Clause"]
    out += banner(spec_path, "//")
    out += ['#include "nl_gen.h"', ""]
    for s in user_sets(fam):
        out.append("const struct nla_policy %s[%s + 1] = {" % (
            user_policy_name(fam, s), fam.set_max(s)))
        for a in s["attributes"]:
            t = a["type"]
            idx = fam.attr_index(s, a["name"])
            if t in SCALAR_WIDTH:
                w = SCALAR_WIDTH[t]
                out.append("\t[%s] = { .type = NLA_%s, .minlen = %d, "
                           ".maxlen = %d }," % (idx, t.upper(), w, w))
            elif t == "flag":
                out.append("\t[%s] = { .type = NLA_FLAG }," % idx)
            elif t == "string":
                out.append("\t[%s] = { .type = NLA_STRING }," % idx)
            elif t == "nest":
                out.append("\t[%s] = { .type = NLA_NESTED }," % idx)
        out += ["};", ""]
    return "\n".join(out).rstrip("\n") + "\n"


# --- main -------------------------------------------------------------------

OUTPUTS = (
    ("include/uapi/linux/dsmem_netlink.h", render_uapi),
    ("kernel/dsmem_nl_gen.h", render_kernel_h),
    ("kernel/dsmem_nl_gen.c", render_kernel_c),
    ("kernel/dsmem_nl_policy.c", render_kernel_policy_c),
    ("user/lib/nl_gen.h", render_user_h),
    ("user/lib/nl_gen.c", render_user_c),
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a generated file is stale; write nothing")
    ap.add_argument("spec", nargs="?", default=DEFAULT_SPEC)
    args = ap.parse_args()

    spec_path = os.path.join(TOP, args.spec)
    with open(spec_path, encoding="utf-8") as f:
        fam = Family(yaml.safe_load(f))
    stale = []
    for path, render in OUTPUTS:
        text = render(fam, args.spec)
        full = os.path.join(TOP, path)
        try:
            with open(full, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        if old == text:
            continue
        if args.check:
            stale.append(path)
        else:
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
            print("nlgen: wrote " + path)
    for path in stale:
        print("nlgen: %s is stale: run scripts/nlgen.py" % path,
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
