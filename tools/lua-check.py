#!/usr/bin/env python3
"""Checks rlock's Lua scripts against what restricted script engines accept (issue 41).

Reads core/src/scripts/mod.rs for the scripts as they are loaded (each `lua!(...)` bundle: the
shared files in front, then the script) and checks, in every bundle:

- every `redis.call` / `redis.pcall` names its command with a string literal: the Alibaba and
  Tencent cluster proxies refuse a script whose command is chosen at run time (redisson#5596);
- the key a command touches is passed in `KEYS`: its key argument is `KEYS[...]`, or a local or
  a function parameter that is only ever bound to such keys (Dragonfly refuses undeclared keys
  by default, and a proxy routes a script by the keys it declares);
- no `TIME`: a lock's lease runs on the server's clock, never read by a script.

The read lock's per-hold lease keys (`{name}:<owner>:rwlock_timeout:<n>`, Redisson's layout)
are built inside Lua, because `n` is only known there (the hold count of the owner); those
sites are listed in ALLOWED_BUILT_KEYS and reported, not refused.

It also checks that the ACL rules of docs/operations/security.md grant every command a
script calls (a script's commands are checked against the caller's ACL one by one): the
`family` rule those of every script but describe's, `family` and `describe` together
describe's.

Exits 1 and names file, line and call on the first kind of failure; `--self-test` shows that a
non-literal command and a key built in Lua are refused.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "core" / "src" / "scripts"

# Commands whose first argument is not a key (a channel), or that take none.
NO_KEY = {"publish", "spublish"}
# Files whose read-hold lease keys are built in Lua (see the module doc), by the key's start.
ALLOWED_BUILT_KEYS = {
    "read_acquire.lua": r"KEYS\[2\] \.\. ':",
    "read_release.lua": r"KEYS\[[34]\] \.\. ':'",
    "renew_reads.lua": r"ARGV\[[^\]]+\] \.\. ':'",
    "describe.lua": r"ARGV\[1\] \.\. ':'",
}

# Files that read the server's clock, and why: describe reports remaining times and changes
# nothing; the permit-expirable semaphore scores permit expiries on the server's clock so rlock
# clients on skewed hosts agree (docs/primitives/permit-expirable-semaphore.md).
ALLOWED_TIME = {"describe.lua", "pes_common.lua"}

CALL = re.compile(r"redis\.p?call\(")
KEYS_REF = re.compile(r"^KEYS\[[^\]]+\]$")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def strip_comments(text):
    """Lua `--` line comments blanked with spaces, so positions stay (strings in these scripts
    hold no `--`)."""
    out = []
    for line in text.split("\n"):
        i = line.find("--")
        out.append(line if i < 0 else line[:i] + " " * (len(line) - i))
    return "\n".join(out)


def split_args(text, start):
    """The top-level arguments of the call whose `(` is at text[start-1]; and the end."""
    depth, args, cur, i, quote = 0, [], "", start, None
    while i < len(text):
        ch = text[i]
        if quote:
            cur += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur += ch
        elif ch in "([{":
            depth += 1
            cur += ch
        elif ch in ")]}":
            if depth == 0:
                args.append(cur.strip())
                return args, i
            depth -= 1
            cur += ch
        elif ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    raise ValueError("unbalanced call")


def functions(code):
    """Top-level `local function NAME(PARAMS)` definitions: (name, params, body start, body
    end). A body ends at the first line that is `end` alone at column 0 (the scripts' layout)."""
    out = []
    for f in re.finditer(r"^local function (\w+)\(([^)]*)\)", code, re.M):
        end = re.compile(r"^end\s*$", re.M).search(code, f.end())
        params = [p.strip() for p in f.group(2).split(",") if p.strip()]
        out.append((f.group(1), params, f.end(), end.end() if end else len(code)))
    return out


def bindings(code, scope):
    """name -> every (expression, scope it is evaluated in) bound to it, as seen from `scope`
    (a function of [`functions`], or None for the top level): the scope's parameters, bound to
    the matching argument of every call of it (in the caller's scope), and `local x = e` /
    `x = e` in the scope's own text."""
    funcs = functions(code)
    if scope is None:
        text = code
        for _, _, start, end in sorted(funcs, key=lambda f: -f[2]):
            text = text[:start] + " " * (end - start) + text[end:]
    else:
        text = code[scope[2]:scope[3]]
    bound = {}
    for m in re.finditer(r"(?:local\s+)?([A-Za-z_]\w*)\s*=\s*([^\n=][^\n]*)", text):
        bound.setdefault(m.group(1), []).append((m.group(2).strip(), scope))
    if scope is not None:
        name, params = scope[0], scope[1]
        for p in params:
            bound[p] = []
        for call in re.finditer(r"(?<![\w.])%s\(" % re.escape(name), code):
            if code[max(0, call.start() - 15):call.start()].endswith("function "):
                continue
            args, _ = split_args(code, call.end())
            caller = next((f for f in funcs if f[2] <= call.start() < f[3]), None)
            for p, a in zip(params, args):
                bound[p].append((a, caller))
    return bound


def is_declared_key(expr, code, scope, seen=()):
    """Whether `expr`, evaluated in `scope`, is always a key passed in KEYS."""
    expr = expr.strip()
    if KEYS_REF.match(expr):
        return True
    if IDENT.match(expr) and (expr, scope) not in seen:
        bound = bindings(code, scope).get(expr)
        # A parameter of a function this script never calls is bound to nothing: never run.
        return bound is not None and all(is_declared_key(e, code, s, seen + ((expr, scope),)) for e, s in bound)
    return False


def line_of(files, code, pos):
    """(file, line) of position `pos` in the bundle `code` made of `files`."""
    offset = 0
    for name, text in files:
        if pos < offset + len(text):
            return name, code[offset:pos].count("\n") + 1
        offset += len(text)
    return files[-1][0], 0


def commands(files):
    """The commands (lower case) the literal `redis.call`s of one bundle name."""
    code = "".join(strip_comments(t) for _, t in files)
    found = set()
    for m in CALL.finditer(code):
        args, _ = split_args(code, m.end())
        lit = re.match(r"^['\"]([a-zA-Z]+)['\"]$", args[0]) if args else None
        if lit:
            found.add(lit.group(1).lower())
    return found


SECURITY = ROOT / "docs" / "operations" / "security.md"


def acl_rule(name):
    """The commands a ```acl no-run NAME block of docs/operations/security.md grants."""
    m = re.search(r"```acl no-run " + re.escape(name) + r"\n(.*?)```", SECURITY.read_text(), re.S)
    if not m:
        return None
    return {t[1:].split("|")[0].lower() for t in m.group(1).split() if t.startswith("+")}


def acl_problems(all_bundles):
    """Commands a script calls that the documented rule for it does not grant."""
    family, describe = acl_rule("family"), acl_rule("describe")
    if family is None or describe is None:
        return [f"{SECURITY.relative_to(ROOT)}: no ```acl family or ```acl describe block"]
    problems = []
    for files in all_bundles:
        script = files[-1][0]
        granted = family | describe if script == "describe.lua" else family
        for command in sorted(commands(files) - granted):
            problems.append(f"{script}: calls {command.upper()}, which the documented ACL rule does not grant")
    return problems


def check_bundle(files):
    """Problems and allowed built keys of one bundle: [(file, text)] in load order."""
    code = "".join(strip_comments(t) for _, t in files)
    funcs = functions(code)
    problems, allowed = [], []
    for m in CALL.finditer(code):
        scope = next((f for f in funcs if f[2] <= m.start() < f[3]), None)
        args, _ = split_args(code, m.end())
        where = "%s:%d" % line_of(files, code, m.start())
        call = "redis.call(%s)" % ", ".join(args)
        command = args[0] if args else ""
        lit = re.match(r"^'([a-zA-Z]+)'$|^\"([a-zA-Z]+)\"$", command)
        if not lit:
            problems.append(f"{where}: the command is not a string literal: {call}")
            continue
        name = (lit.group(1) or lit.group(2)).lower()
        if name == "time":
            if where.split(":")[0] in ALLOWED_TIME:
                allowed.append(f"{where}: TIME")
            else:
                problems.append(f"{where}: TIME on a lock's path (a lease runs on the server's clock): {call}")
            continue
        if name in NO_KEY or len(args) < 2:
            continue
        key = args[1]
        if is_declared_key(key, code, scope):
            continue
        file = where.split(":")[0]
        allowed_here = ALLOWED_BUILT_KEYS.get(file)
        if allowed_here and re.match(allowed_here, key):
            allowed.append(f"{where}: {key}")
            continue
        problems.append(f"{where}: a key not passed in KEYS: {call}")
    return problems, allowed


def bundles():
    """Each script as mod.rs loads it: [(file name, text)] in order."""
    mod = (SCRIPTS / "mod.rs").read_text()
    out = []
    for m in re.finditer(r"lua!\(((?:\"lua/[\w.]+\"\s*,?\s*)+)\)", mod):
        names = re.findall(r"\"lua/([\w.]+)\"", m.group(1))
        out.append([(n, (SCRIPTS / "lua" / n).read_text()) for n in names])
    return out


def self_test():
    bad_command = [("x.lua", "redis.call(ARGV[1], KEYS[1], 'm')\n")]
    built_key = [("x.lua", "redis.call('set', KEYS[1] .. ':x', 1)\n")]
    aliased = [("x.lua", "local k = KEYS[1]\nlocal function f(a)\n  return redis.call('get', a)\nend\n"
                         "f(k)\nredis.call('del', k)\n")]
    leaked = [("x.lua", "local function f(a)\n  return redis.call('get', a)\nend\nf(KEYS[1])\nf('other')\n")]
    assert check_bundle(bad_command)[0], "a non-literal command must be refused"
    assert check_bundle(built_key)[0], "a key built in Lua must be refused"
    assert not check_bundle(aliased)[0], check_bundle(aliased)
    assert check_bundle(leaked)[0], "a parameter bound once to a literal key must be refused"
    assert check_bundle([("x.lua", "redis.call('time')\n")])[0]
    shadowed = [("x.lua", "local function f(q)\n  return redis.call('get', q)\nend\n"
                          "f(KEYS[1])\nlocal q = redis.call('get', KEYS[2])\nredis.call('del', q)\n")]
    assert check_bundle(shadowed)[0], "a key read from a value is not declared, whatever a parameter is called"
    assert acl_problems([[("x.lua", "redis.call('flushall')\n")]]), "a command no ACL rule grants must be refused"
    print("lua-check self-test: a non-literal command, a built key, a leaked parameter, TIME and a "
          "command security.md's ACL rules do not grant are refused")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    all_problems, all_allowed, n = [], set(), 0
    for files in bundles():
        problems, allowed = check_bundle(files)
        all_problems += [p for p in problems if p not in all_problems]
        all_allowed.update(allowed)
        n += 1
    loaded = {name for files in bundles() for name, _ in files}
    unused = sorted(p.name for p in (SCRIPTS / "lua").glob("*.lua") if p.name not in loaded)
    if unused:
        all_problems.append("scripts mod.rs does not load (so they go unchecked): " + ", ".join(unused))
    all_problems += acl_problems(bundles())
    if all_problems:
        print("lua-check: scripts restricted engines refuse:")
        for p in all_problems:
            print("  " + p)
        return 1
    print(f"lua-check: {n} scripts: literal command names, keys from KEYS, no TIME "
          f"(allowed: {len(all_allowed)} read-hold lease keys built in Lua, Redisson's layout, and "
          f"TIME in describe and the permit-expirable semaphore); security.md's ACL rules grant "
          f"every command they call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
