#!/usr/bin/env python3
"""uftrace's own argument and return-value tests against dcg, value by value.

    bench/uftrace-values.py [--src DIR] [--dcg PATH] [--only NAME] [--show N]

Every C test of uftrace 0.13 (`tests/t*.py`) whose expected output shows values is built
as uftrace's runner builds it (its flags, `-pg`), at -O0 and at -O2, and run twice in this
run: under Debian's `uftrace` with the test's own options (the oracle: the values it
shows) and under `dcg trace --show-retvals --args` (in process; every function of the
program, plus the library functions uftrace showed values for). Each value uftrace shows
is then: agreed (dcg shows the same, or what the test's own expectation shows where uftrace's live value
contradicts it), wrong (dcg shows another), an address (heap and stack pointers differ from
run to run), or not shown (dcg shows `?`, a raw register, or no such call). Variadic
arguments (`...`) are counted apart.

uftrace's sources are not copied into dcg: --src names a checkout or unpacked tarball of
uftrace v0.13; without it the pinned Debian source tarball is downloaded into
~/.cache/dcg-bench (the mirror must serve source packages: DCG_DEBIAN_MIRROR).
Needs root (uprobes for what the recorder cannot hook), gcc and uftrace
(.ci/install-deps.sh). Prints a table per level and each disagreement.
"""

import argparse
import hashlib
import importlib
import os
import re
import shutil
import subprocess as sp
import sys
import tarfile
import urllib.request

PIN = ("uftrace_0.13.orig.tar.gz", 1159844,
       "cffae82c68446c20cc3c7e87e71e57498805767a0d4085b4846f3c49f9e472d9",
       "pool/main/u/uftrace/uftrace_0.13.orig.tar.gz")
LEVELS = ["-O0", "-O2"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(f"uftrace-values: {msg}", file=sys.stderr)
    sys.exit(2)


def source_dir(src):
    if src:
        if not os.path.isfile(os.path.join(src, "tests", "runtest.py")):
            fail(f"{src}: not uftrace's source tree (no tests/runtest.py)")
        return os.path.abspath(src)
    cache = os.path.expanduser("~/.cache/dcg-bench")
    top = os.path.join(cache, "uftrace-0.13")
    if os.path.isfile(os.path.join(top, "tests", "runtest.py")):
        return top
    os.makedirs(cache, exist_ok=True)
    name, size, sha, path = PIN
    mirror = os.environ.get("DCG_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    url = f"{mirror}/{path}"
    tgz = os.path.join(cache, name)
    try:
        urllib.request.urlretrieve(url, tgz + ".part")
    except OSError as e:
        fail(f"{url}: {e} (give --src DIR, a checkout of uftrace v0.13)")
    data = open(tgz + ".part", "rb").read()
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
        os.remove(tgz + ".part")
        fail(f"{url}: not the pinned file (size {len(data)}, want {size} and sha256 {sha})")
    os.rename(tgz + ".part", tgz)
    with tarfile.open(tgz) as t:
        t.extractall(cache, filter="data")
    return top


# ---- the programs' output, as calls with values ------------------------------------

def split_args(s):
    out, cur, depth, quoted, esc = [], "", 0, None, False
    for c in s:
        if esc:
            esc = False
        elif c == "\\" and quoted:
            esc = True
        elif c in "\"'" and (quoted is None or quoted == c):
            quoted = None if quoted else c
        elif c in "({[" and not quoted:
            depth += 1
        elif c in ")}]" and not quoted:
            depth -= 1
        elif c == "," and not quoted and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def close_paren(s):
    depth, quoted, esc = 0, None, False
    for i, c in enumerate(s):
        if esc:
            esc = False
        elif c == "\\" and quoted:
            esc = True
        elif c in "\"'" and (quoted is None or quoted == c):
            quoted = None if quoted else c
        elif c == "(" and not quoted:
            depth += 1
        elif c == ")" and not quoted:
            if depth == 0:
                return i
            depth -= 1
    return None


def uftrace_calls(text):
    """`f(1, 2) = 3;`, `f(1) {` ... `} = 3; /* f */`: [name, [args], ret or None]."""
    calls, stack = [], []
    for line in text.splitlines():
        t = line.split("|", 1)[-1].strip()
        if not t or t.startswith("#"):
            continue
        if t.startswith("}"):
            if not stack:
                continue
            c = stack.pop()
            m = re.match(r"\} = (.*); /\* (.*) \*/$", t)
            if m and calls[c] is not None:
                calls[c][2] = m.group(1)
            continue
        m = re.match(r"([\w.@:~<>]+)\(", t)
        if not m:
            continue
        rest = t[m.end():]
        end = close_paren(rest)
        if end is None:
            continue
        args = split_args(rest[:end])
        tail = rest[end + 1:].strip()
        ret = None
        if tail.startswith("= "):
            ret = tail[2:].rstrip(";").strip()
        calls.append([m.group(1), args, ret])
        if tail.endswith("{"):
            stack.append(len(calls) - 1)
    return calls


def dcg_calls(text):
    """dcg's function_graph text: [name, [(name, value)], ret or None, variadic]."""
    calls, stack = [], []
    for line in text.splitlines():
        if "|  " not in line:
            continue
        cut = min([i for i in (line.find("("), line.find("}")) if i >= 0] or [len(line)])
        at = line.rfind("|  ", 0, cut)
        if at < 0:
            continue
        t = line[at + 3:].strip()
        if t.startswith("}"):
            if stack:
                c = stack.pop()
                m = re.search(r" ret=(.*) \*/$", t)
                if m:
                    calls[c][2] = m.group(1)
            continue
        m = re.match(r"([\w.@:~<>]+)\(", t)
        if not m:
            continue
        rest = t[m.end():]
        end = close_paren(rest)
        if end is None:
            continue
        args = []
        for a in split_args(rest[:end]):
            n, eq, v = a.partition("=")
            args.append((n, v) if eq and re.fullmatch(r"\w+", n) else ("", a))
        tail = rest[end + 1:]
        ret = None
        m2 = re.search(r"/\* ret=(.*?) \*/", tail)
        if m2:
            ret = m2.group(1)
        # A longjmp says what the setjmp it resumes returns (`/* _setjmp returns 1 */`);
        # uftrace prints that value on the longjmp's closing line (`} = 1; /* _setjmp */`).
        m3 = re.search(r"/\* \w+ returns (.*?) \*/", tail)
        if m3 and ret is None:
            ret = m3.group(1)
        calls.append([m.group(1), args, ret])
        if tail.rstrip().endswith("{"):
            stack.append(len(calls) - 1)
    return calls


# ---- values -------------------------------------------------------------------------

# The symbolic names uftrace's own argument specs print for libc's flags and signals.
UFTRACE_NAMES = {"PROT_NONE": 0, "SIGNULL": 0, "O_RDONLY": 0}


def as_number(v):
    v = v.strip()
    if v in UFTRACE_NAMES:
        return UFTRACE_NAMES[v]
    if v in ("NULL", "false", '"NULL"'):
        return 0
    if v == "true":
        return 1
    q = re.fullmatch(r"(?:-?\d+ )?'(.+)'", v)
    if q:
        # A char: 'a', '\x01', '\n'.
        try:
            c = q.group(1).encode().decode("unicode_escape")
            return ord(c) if len(c) == 1 else None
        except (UnicodeDecodeError, ValueError):
            return None
    try:
        if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", v):
            return int(v, 0)
        if re.fullmatch(r"-?0x[0-9a-fA-F.]+p[-+]?\d+", v):
            return float.fromhex(v)
        return float(v)
    except (ValueError, OverflowError):
        return None


def strip_casts(v):
    # dcg: `(enum_t)3`, `(vfsuid_t)0x0`; uftrace: plain.
    return re.sub(r"^\([\w ]+\)", "", v.strip())


def same(oracle, shown):
    """Whether dcg's `shown` says what uftrace's `oracle` does."""
    o, s = oracle.strip(), strip_casts(shown)
    if o == s:
        return True
    # A char: uftrace 'a', dcg 97 'a' or 'a'.
    qo = re.fullmatch(r"'(.+)'", o)
    qs = re.search(r"'(.+)'$", s)
    if qo and qs and qo.group(1) == qs.group(1):
        return True
    # Strings: uftrace "x", dcg "x" (maybe with its address first).
    if o.startswith('"') and o != '"NULL"':
        return s.endswith(o) or o in s
    # Pointers into a program shown by name: dcg &name, uftrace &name or 0x...
    if o.startswith("&") or s.startswith("&"):
        return o.lstrip("&").split("+")[0] == s.lstrip("&").split("+")[0]
    a, b = as_number(o), as_number(s)
    if a is None or b is None:
        # Enums and flags: uftrace A|B, dcg A|B.
        return o.replace(" ", "") == s.replace(" ", "")
    if isinstance(a, int) and isinstance(b, int):
        # uftrace prints a narrow argument as its register's low bits (/i8, /x).
        return any(a % (1 << n) == b % (1 << n) for n in (64, 32, 16, 8))
    # Floats: uftrace prints %f (six decimals), dcg the shortest exact form.
    return abs(float(a) - float(b)) <= 5e-6 * max(1.0, abs(float(a)))


def is_address(v):
    return bool(re.fullmatch(r"0x[0-9a-f]{8,}", v.strip()))


def unreadable(v):
    return v.startswith("?") or "(raw)" in v or v == "..."


# ---- one test -------------------------------------------------------------------------

def expected_says(expected, name, what, k, shown):
    """Whether the test's own expected output has `shown` for that value of a `name` call."""
    for n, args, ret in expected:
        if n != name:
            continue
        v = ret if what == "ret" else (args[k] if k < len(args) else None)
        if v is not None and same(v, shown):
            return True
    return False


def shows_values(result):
    for line in result.splitlines():
        t = line.split("|", 1)[-1].strip()
        if re.match(r"[\w.]+\(.+\)", t) or re.search(r"\) = |\} = ", t):
            return True
    return False


def lib_functions(prog):
    """Exported function name -> library path, for the libraries `prog` loads."""
    out = sp.run(["ldd", prog], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.search(r"=> (\S+)", line)
        if not m or not os.path.exists(m.group(1)):
            continue
        lib = os.path.realpath(m.group(1))
        names = sp.run(["nm", "-D", "--defined-only", lib],
                       capture_output=True, text=True).stdout
        for n in names.splitlines():
            parts = n.split()
            if len(parts) == 3 and parts[1] in "TtiW":
                found.setdefault(parts[2].split("@")[0], lib)
    return found


ALIASES = {}


def lib_aliases(lib, name):
    """Every name of the function `name` of `lib` (dcg shows DWARF's: `free` is
    `__libc_free`): the symbols at its address, the debug file's included."""
    if lib not in ALIASES:
        files = [lib]
        bid = re.search(r"Build ID: (\w+)", sp.run(["readelf", "-n", lib], capture_output=True,
                                                   text=True).stdout)
        if bid:
            d = f"/usr/lib/debug/.build-id/{bid.group(1)[:2]}/{bid.group(1)[2:]}.debug"
            if os.path.exists(d):
                files.append(d)
        by_addr, by_name = {}, {}
        for f in files:
            for flag in (["-D"], []):
                out = sp.run(["nm", *flag, "--defined-only", f], capture_output=True,
                             text=True).stdout
                for line in out.splitlines():
                    parts = line.split()
                    if len(parts) == 3 and parts[1] in "TtWi":
                        n = parts[2].split("@")[0]
                        by_addr.setdefault(parts[0], set()).add(n)
                        by_name.setdefault(n, parts[0])
        ALIASES[lib] = (by_addr, by_name)
    by_addr, by_name = ALIASES[lib]
    return by_addr.get(by_name.get(name), set()) | {name}


def run_test(tc, level, dcg, tally, problems):
    os.chdir(tc.test_dir)
    for f in os.listdir("."):
        if f.startswith("t-") or f.endswith(".so") or f == "uftrace.data":
            p = os.path.join(".", f)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    # As uftrace's runner passes its flags: CFLAGS reaches every build of a test (its
    # libraries too).
    os.environ["CFLAGS"] = f"-pg -g {level}"
    r = tc.build(tc.name, "", "")
    if r != 0:
        tally["skipped"].append(f"{tc.name}{level} (build: {r})")
        return
    option, exearg = tc.option, tc.exearg
    tc.setup()
    cmd = tc.runcmd()
    try:
        up = sp.run(cmd, shell=True, capture_output=True, text=True, timeout=120)
    except sp.TimeoutExpired:
        tally["skipped"].append(f"{tc.name}{level} (uftrace timed out)")
        return
    oracle = [c for c in uftrace_calls(up.stdout) if c[1] or c[2] is not None]
    run_arg = tc.exearg.split()
    tc.option, tc.exearg = option, exearg
    if not oracle:
        tally["skipped"].append(f"{tc.name}{level} (uftrace showed no values)")
        return
    prog = os.path.abspath(run_arg[0])
    own = set(sp.run(["nm", "--defined-only", prog], capture_output=True,
                     text=True).stdout.split())
    libs = lib_functions(prog)
    funcs = [f"{prog}:*"]
    # The test's own libraries (built beside it): every function, static ones too.
    funcs += sorted({f"{lib}:*" for lib in libs.values()
                     if os.path.dirname(lib) == os.path.dirname(prog)})
    for name in sorted({c[0] for c in oracle}):
        if name not in own and name in libs and f"{libs[name]}:*" not in funcs:
            funcs.append(f"{libs[name]}:{name}")
    aliases = {n: lib_aliases(libs[n], n) for n in {c[0] for c in oracle}
               if n not in own and n in libs}
    argv = [dcg, "trace", "--show-retvals", "--args"]
    for f in funcs:
        argv += ["--func", f]
    argv += ["--", prog] + run_arg[1:]
    # uftrace keeps its channel to the recorder open at fd 3 of the traced program
    # (`uftrace.data/.channel`), so the program's own files start at 4 there: dcg's run
    # gets the same layout (an inherited /dev/null at 3) for file descriptors to compare.
    fd3 = os.open(os.devnull, os.O_RDONLY)
    if fd3 != 3:
        os.dup2(fd3, 3)
        os.close(fd3)
    os.set_inheritable(3, True)
    try:
        dt = sp.run(argv, capture_output=True, text=True, timeout=300, pass_fds=(3,))
    except sp.TimeoutExpired:
        tally["skipped"].append(f"{tc.name}{level} (dcg timed out)")
        return
    finally:
        os.close(3)
    if dt.returncode != 0:
        why = (dt.stderr.strip().splitlines() or ["?"])[-1]
        problems.append(f"{tc.name}{level}: dcg exited {dt.returncode}: {why} ({' '.join(argv)})")
    traced = dcg_calls(dt.stdout)
    expected = uftrace_calls(tc.result)
    used = [False] * len(traced)
    for name, args, ret in oracle:
        names = aliases.get(name, {name})
        cands = [i for i in range(len(traced)) if not used[i] and traced[i][0] in names]
        # dcg shows every call, uftrace those its filters keep (-F main): the call whose
        # values agree, else the first.
        i = next((i for i in cands if all(
            any(same(a, g) for _, g in traced[i][1]) for a in args
            if not re.fullmatch(r"\w*\{.*\}", a))), cands[0] if cands else None)
        want = [("arg", a) for a in args] + ([("ret", ret)] if ret is not None else [])
        if i is None:
            for what, v in want:
                tally["not shown"] += 1
                problems.append(f"{tc.name}{level} {name}.{what}={v}: no such call in dcg's trace")
            continue
        used[i] = True
        got = [v for _, v in traced[i][1]]
        variadic = bool(got) and got[-1] == "..."
        fixed = got[:-1] if variadic else got
        taken = [False] * len(fixed)
        for k, (what, v) in enumerate(want):
            if re.fullmatch(r"\w*\{.*\}", v):
                # uftrace shows a struct passed by value as `name{...}`: no value.
                if k < len(taken):
                    taken[k] = True
                continue
            if what == "ret":
                shown = traced[i][2]
            else:
                # uftrace shows the arguments its options chose, in their order: the
                # one of dcg's that says the same, else the one in its place.
                j = next((j for j in range(len(fixed)) if not taken[j] and same(v, fixed[j])),
                         None)
                if j is None and variadic:
                    tally["variadic"] += 1
                    continue
                if j is None and k < len(fixed) and not taken[k]:
                    j = k
                if j is not None:
                    taken[j] = True
                shown = fixed[j] if j is not None else None
            if shown is None or unreadable(shown):
                tally["not shown"] += 1
                problems.append(f"{tc.name}{level} {name}.{what}: uftrace {v}, dcg {shown}")
            elif same(v, shown):
                tally["agree"] += 1
            elif expected_says(expected, name, what, k, shown):
                # uftrace live contradicts its own test's expectation; dcg agrees with it.
                tally["agree"] += 1
                problems.append(f"{tc.name}{level} {name}.{what}: uftrace {v} here, its "
                                f"expectation and dcg {shown}")
            elif is_address(v) and is_address(shown):
                # Heap and stack addresses differ from run to run (and uftrace's own
                # allocations move the program's).
                tally["addresses"] += 1
            else:
                tally["wrong"] += 1
                problems.append(f"{tc.name}{level} {name}.{what}: uftrace {v}, dcg {shown} WRONG")
    tally["tests"] += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", help="uftrace v0.13's source tree")
    ap.add_argument("--dcg", default=os.path.join(REPO, "target", "release", "dcg"))
    ap.add_argument("--only", help="one test (its program name, e.g. exp-float)")
    ap.add_argument("--show", type=int, default=200, help="disagreements printed")
    a = ap.parse_args()
    if os.geteuid() != 0:
        fail("run as root (uprobes)")
    if not shutil.which("uftrace"):
        fail("uftrace is missing (.ci/install-deps.sh)")
    if not os.access(a.dcg, os.X_OK):
        fail(f"{a.dcg}: no dcg binary (cargo build --release)")
    src = source_dir(a.src)
    tests = os.path.join(src, "tests")
    os.chdir(tests)
    sys.path.insert(0, tests)
    runtest = importlib.import_module("runtest")
    runtest.TestBase.uftrace_cmd = "uftrace"
    runtest.TestBase.default_opt = "--no-pager --no-event -f none"
    chosen = []
    for f in sorted(os.listdir(tests)):
        if not re.fullmatch(r"t\d+_.*\.py", f):
            continue
        os.chdir(tests)
        try:
            with open(os.devnull, "w") as null:
                old = sys.stdout
                sys.stdout = null
                try:
                    tc = importlib.import_module(f[:-3]).TestCase()
                finally:
                    sys.stdout = old
        except Exception:
            continue
        if a.only and tc.name != a.only:
            continue
        tc.debug = False
        if tc.lang != "C" or tc.subcmd != "live" or not shows_values(tc.result):
            continue
        if not os.path.exists(os.path.join(tests, f"s-{tc.name}.c")):
            continue
        chosen.append(tc)
    print(f"uftrace {src}: {len(chosen)} C tests show values; dcg {a.dcg}")
    for level in LEVELS:
        tally = {"tests": 0, "agree": 0, "wrong": 0, "not shown": 0, "variadic": 0,
                 "addresses": 0,
                 "skipped": []}
        problems = []
        for tc in chosen:
            run_test(tc, level, os.path.abspath(a.dcg), tally, problems)
        total = tally["agree"] + tally["wrong"] + tally["not shown"] + tally["addresses"]
        print(f"\n{level}: {tally['tests']} tests, {total} values uftrace shows "
              f"(variadic aside: {tally['variadic']})")
        print(f"  agree      {tally['agree']:5}")
        print(f"  wrong      {tally['wrong']:5}")
        print(f"  not shown  {tally['not shown']:5}")
        print(f"  addresses  {tally['addresses']:5}  (heap/stack pointers: differ run to run)")
        if tally["skipped"]:
            print(f"  skipped: {', '.join(tally['skipped'])}")
        for p in problems[: a.show]:
            print(f"    {p}")
        if len(problems) > a.show:
            print(f"    ... {len(problems) - a.show} more")


if __name__ == "__main__":
    main()
