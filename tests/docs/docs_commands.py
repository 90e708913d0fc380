#!/usr/bin/env python3
"""The docs cannot drift from the CLI (issue 23).

1. Every `nnapi-convert ...` command line shown in README.md and docs/*.md (in an
   indented code block, or in backticks in the text) is run, in a scratch
   directory, against stand-in files, and must not end in a usage error: exit 2,
   or a message of the command-line parser (an unknown option, a missing or extra
   argument). Exit 0 and exit 1 (a stand-in model that does not convert with the
   line's options) both pass: what is checked is that the line parses as the docs
   show it.

   Stand-ins: every file a line reads is made in the scratch directory under the
   name the line uses. A model (`*.pt` given as a model path) is
   examples/tiny_cnn.pt (one input) or, when the line gives N > 1 `--input` specs,
   a traced module with N inputs; a converted module (`*.nnapi.pt`, or a
   `ser_model.bin`) is tiny_cnn converted; a `--manifest` file lists one stand-in
   model with its input; a `--verify-input` file holds a tensor of the line's
   --verify-shape or --input sizes; a report `merge-reports` reads is the
   --report of a conversion of a model of its own. Outputs go to the scratch
   directory.

   Placeholders: a line holding `...` (or a `<name>` or all-capitals word like
   `COMMAND` or `FILE`) stands for
   something the reader fills in, so it is not run; only its option names are
   checked against `--help` (below). `[--json]` means the option may be given,
   and the line is run with it. A trailing `# comment` is not part of the line.

2. The option names the docs give for nnapi-convert (those on its command lines,
   and the first column of the option tables, rows `| \`--opt ...\` | ...`) are
   exactly the options `--help` lists, with those of the subcommands' `--help`;
   and the man page (generated from `--help` by help2man), when it was built,
   names the same options as the main `--help`.

Usage: docs_commands.py NNAPI_CONVERT SOURCE_DIR EXAMPLE_MODEL [MAN_PAGE]
       docs_commands.py --self-test    (the table reader on rows written here)
"""
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SELF_TEST = sys.argv[1:] == ["--self-test"]
if not SELF_TEST:
    BIN, SRC, EXAMPLE = sys.argv[1], sys.argv[2], sys.argv[3]
    MAN = sys.argv[4] if len(sys.argv) > 4 else ""
# Words after which "nnapi-convert" is a name, not the command being run.
NOT_A_COMMAND_AFTER = {"-t", "--bin", "man", "install", "clone", "cd", "NNAPI_CONVERT="}
# Command lines the docs show as usage errors on purpose.
SHOWN_AS_ERRORS = {"nnapi-convert inpsect x.pt"}
# What the command-line parser (CLI11) says for an option it does not know.
UNKNOWN_OPTION = re.compile(r"was not expected|unknown option|Run nnapi-convert --help", re.I)


def doc_files():
    files = [os.path.join(SRC, "README.md")]
    ddir = os.path.join(SRC, "docs")
    files += sorted(os.path.join(ddir, f) for f in os.listdir(ddir) if f.endswith(".md"))
    return files


def code_lines(text):
    """(line number, text) of command-like text: indented code blocks joined
    over trailing backslashes, and inline `code` spans."""
    out = []
    lines = text.split("\n")
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            in_fence = not in_fence
            i += 1
            continue
        if in_fence or line.startswith("    "):
            start = i
            joined = line.strip()
            while joined.endswith("\\") and i + 1 < len(lines):
                i += 1
                joined = joined[:-1].rstrip() + " " + lines[i].strip()
            out.append((start + 1, joined))
        else:
            # inline spans, possibly wrapped onto the next line of the paragraph
            para = line
            for m in re.finditer(r"`([^`]+)`", para):
                out.append((i + 1, m.group(1)))
            if para.count("`") % 2 == 1 and i + 1 < len(lines):
                rest = lines[i + 1]
                tail = para[para.rindex("`") + 1:] + " " + rest[:rest.find("`")]
                out.append((i + 1, tail.strip()))
        i += 1
    return out


def command_in(text):
    """The argument list of the nnapi-convert command in text, or None."""
    text = re.sub(r"\s#\s.*$", "", text)  # a trailing comment
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    for k, w in enumerate(words):
        name = os.path.basename(w)
        if name != "nnapi-convert" or w.startswith("$"):
            continue
        if k > 0 and (words[k - 1] in NOT_A_COMMAND_AFTER or words[k - 1].endswith("=")):
            continue
        if "/" in w and not (w.startswith("build/") or "/bin/" in w):
            continue
        return words[k + 1:]
    return None


def options_in(args):
    opts = set()
    for a in args:
        m = re.match(r"^(--[a-z][a-z0-9-]*|-[a-zA-Z])(=.*)?$", a)
        if m:
            opts.add(m.group(1))
    return opts


def help_options(text):
    """The options of a --help text, each as the set of its aliases (-v, --verbose)."""
    groups = set()
    for line in text.split("\n"):
        m = re.match(r"^\s+((?:-[a-zA-Z],)?--[a-z][a-z0-9-]*(?:,--[a-z][a-z0-9-]*)*)", line)
        if m:
            groups.add(frozenset(m.group(1).split(",")))
    return groups


def table_options(text):
    """Options in the first column of tables whose rows name options."""
    opts = set()
    for line in text.split("\n"):
        if not line.startswith("| `-"):
            continue
        # A cell's `\|` (an escaped bar, as in `a\|b` choices) is no column break.
        first = re.split(r"(?<!\\)\|", line)[1]
        for span in re.findall(r"`([^`]+)`", first):
            for o in re.findall(r"(?:^|[\s,/])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b", " " + span):
                opts.add(o)
    return opts


def subcommands():
    """The commands --help lists under "Subcommands:"."""
    text = subprocess.run([BIN, "--help"], stdout=subprocess.PIPE).stdout.decode()
    block = text.split("Subcommands:", 1)[1].split("\n\n", 1)[0]
    return tuple(m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*)\s", block, re.M))


SUBCOMMANDS = () if SELF_TEST else subcommands()


def run(args, cwd, timeout=300):
    p = subprocess.run([BIN] + args, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stderr.decode(errors="replace")


def make_multi_input(path, n):
    code = (
        "import sys, torch\n"
        "n = int(sys.argv[2])\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, *xs):\n"
        "        return tuple(x.relu() for x in xs)\n"
        "m = torch.jit.trace(M().eval(), tuple(torch.randn(1, 2) for _ in range(n)))\n"
        "torch.jit.save(m, sys.argv[1])\n")
    subprocess.run(["/usr/bin/python3", "-c", code, path, str(n)], check=True)


def spec_dims(spec, default_last=8):
    dims = [int(d) for d in spec.split(",")[0].split("x")]
    return [d if d else (1 if i == 0 else 224 if len(dims) == 4 and i >= 2 else default_last)
            for i, d in enumerate(dims)]


def prepare(args, work, converted):
    """Makes the stand-in files args read; returns args to run."""
    inputs = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--input"]
    shapes = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--verify-shape"]
    model = os.path.join(work, "standin-%d.pt" % max(1, len(inputs)))
    if not os.path.exists(model):
        if len(inputs) > 1:
            make_multi_input(model, len(inputs))
        else:
            shutil.copy(EXAMPLE, model)
    takes_value = {"-o", "--output", "--out-dir", "--parts", "--report", "--junit",
                   "--manifest", "--verify-input", "--ops-library", "--input",
                   "--verify-shape", "--return-shape", "--preference", "--timeout",
                   "-j", "--jobs", "--atol", "--rtol", "--min-android-api"}
    i = 0
    is_inspect = bool(args) and args[0] == "inspect"
    while i < len(args):
        a = args[i]
        if a in takes_value:
            value = args[i + 1] if i + 1 < len(args) else None
            if a == "--manifest" and value:
                path = os.path.join(work, value)
                os.makedirs(os.path.dirname(path) or work, exist_ok=True)
                shutil.copy(EXAMPLE, os.path.join(os.path.dirname(path), "m1.pt"))
                with open(path, "w") as f:
                    json.dump([{"model": "m1.pt", "inputs": ["1x3x32x32"]}], f)
            elif a == "--verify-input" and value:
                dims = [spec_dims(s) for s in (shapes or inputs)]
                code = ("import sys, json, torch\n"
                        "ts = [torch.randn(d) for d in json.loads(sys.argv[2])]\n"
                        "torch.save(ts[0] if len(ts) == 1 else tuple(ts), sys.argv[1])\n")
                subprocess.run(["/usr/bin/python3", "-c", code, os.path.join(work, value),
                                json.dumps(dims)], check=True)
            elif a in ("--out-dir", "--parts") and value:
                os.makedirs(os.path.join(work, os.path.dirname(value.rstrip("/")) or "."),
                            exist_ok=True)
            elif a in ("-o", "--output", "--report", "--junit") and value and value != "-":
                os.makedirs(os.path.join(work, os.path.dirname(value) or "."), exist_ok=True)
            i += 2
            continue
        if not a.startswith("-") and a not in SUBCOMMANDS:
            path = os.path.join(work, a)
            if a.endswith(".nnapi.pt") or a.endswith("ser_model.bin"):
                os.makedirs(os.path.dirname(path) or work, exist_ok=True)
                src = converted[1] if a.endswith(".bin") else converted[0]
                shutil.copy(src, path)
            elif a.endswith(".json") and args[0] == "merge-reports":
                # the --report of a run converting one model of its own
                stem = os.path.splitext(os.path.basename(a))[0]
                shutil.copy(converted[2], os.path.join(work, stem + ".pt"))
                run([stem + ".pt", "--input", "1x3x32x32", "-q", "--report", path], work)
            elif a.endswith(".pt") and not is_inspect:
                os.makedirs(os.path.dirname(path) or work, exist_ok=True)
                shutil.copy(model, path)
        i += 1
    return args


def main():
    problems = []
    work_root = tempfile.mkdtemp(prefix="docs-commands-")
    try:
        # A converted module and its parts, for `inspect` lines.
        conv = os.path.join(work_root, "converted")
        os.makedirs(conv)
        shutil.copy(EXAMPLE, os.path.join(conv, "m.pt"))
        code, err = run(["m.pt", "--input", "1x3x32x32", "--nhwc", "--parts", "parts", "-q"], conv)
        if code != 0:
            print("docs: could not convert the example model for the stand-ins:\n" + err)
            return 1
        converted = (os.path.join(conv, "m.nnapi.pt"), os.path.join(conv, "parts", "ser_model.bin"),
                     os.path.join(conv, "m.pt"))

        documented = set()
        commands = []
        for path in doc_files():
            rel = os.path.relpath(path, SRC)
            text = open(path, encoding="utf-8").read()
            documented |= table_options(text)
            for lineno, chunk in code_lines(text):
                args = command_in(chunk)
                if args is None:
                    continue
                if not args or chunk.strip() in SHOWN_AS_ERRORS:
                    continue  # the program's name in the text, or an error shown on purpose
                args = [a.strip("[]") if re.fullmatch(r"\[-[-a-z0-9]+\]", a) else a for a in args]
                documented |= options_in(args)
                placeholder = any("..." in a or re.fullmatch(r"<[^>]+>|[A-Z][A-Z_]*", a)
                                  for a in args)
                commands.append((rel, lineno, args, placeholder))

        # 2. the options the docs name against --help and the man page.
        helptext = subprocess.run([BIN, "--help"], stdout=subprocess.PIPE).stdout.decode()
        main_opts = help_options(helptext)
        all_opts = set(main_opts)
        for sub in SUBCOMMANDS:
            t = subprocess.run([BIN, sub, "--help"], stdout=subprocess.PIPE).stdout.decode()
            all_opts |= help_options(t)
        undocumented = sorted("/".join(sorted(g)) for g in all_opts if not g & documented)
        known = set().union(*all_opts)
        unknown = sorted(documented - known)
        if undocumented:
            problems.append("options --help lists that no page of docs/ names in a command "
                            "line or an option table: " + ", ".join(undocumented))
        if unknown:
            problems.append("options the docs name that --help does not list: " +
                            ", ".join(unknown))
        if MAN and os.path.exists(MAN):
            opener = gzip.open if MAN.endswith(".gz") else open
            with opener(MAN, "rt", encoding="utf-8", errors="replace") as f:
                man = re.sub(r"\\f[A-Z]|\\[,/]", "", f.read()).replace("\\-", "-")
            man_opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", man))
            long_main = {o for g in main_opts for o in g if o.startswith("--")}
            if man_opts != long_main:
                problems.append("the man page %s and --help differ: only in the man page %s, "
                                "only in --help %s" % (MAN, sorted(man_opts - long_main),
                                                      sorted(long_main - man_opts)))

        # 1. run every command line without placeholders.
        ran = 0
        for n, (rel, lineno, args, placeholder) in enumerate(commands):
            shown = "nnapi-convert " + " ".join(args)
            if placeholder:
                print("docs: placeholder, options checked only: %s:%d: %s" % (rel, lineno, shown))
                continue
            work = os.path.join(work_root, "c%d" % n)
            os.makedirs(work)
            args = prepare(args, work, converted)
            code, err = run(args, work)
            ran += 1
            print("docs: exit %d: %s:%d: %s" % (code, rel, lineno, shown))
            if code == 2 or UNKNOWN_OPTION.search(err):
                problems.append("%s:%d: `%s` is a usage error (exit %d):\n    %s" %
                                (rel, lineno, shown, code, err.strip().replace("\n", "\n    ")))
            elif code not in (0, 1):
                problems.append("%s:%d: `%s` exited with %d:\n    %s" %
                                (rel, lineno, shown, code, err.strip()[-800:]))
        for p in problems:
            print("docs: " + p)
        print("docs: %d command lines found, %d run, %d with placeholders checked for their "
              "options only; %d options in --help" %
              (len(commands), ran, len(commands) - ran, len(all_opts)))
        if problems:
            return 1
        print("docs: commands ok")
        return 0
    finally:
        shutil.rmtree(work_root, ignore_errors=True)


def self_test():
    """table_options on rows like docs/cli.md's: an escaped bar in the first
    cell must not hide the options after it."""
    row = ("| `--quantize uint8`, `--calibration-method minmax\\|histogram`, "
           "`--quantize-skip KIND\\|VALUE`, `--min-sqnr DB` | quantization; `a\\|b` |\n")
    cases = [
        (row, {"--quantize", "--calibration-method", "--quantize-skip", "--min-sqnr"}),
        ("| `--preference low-power\\|fast` | preference |\n", {"--preference"}),
        ("| `-q`, `--quiet` | quiet |\n| not an option row `--x` |\n", {"-q", "--quiet"}),
    ]
    failed = 0
    for text, want in cases:
        got = table_options(text)
        if got != want:
            failed += 1
            print("docs: table_options(%r) = %s, expected %s" % (text, sorted(got), sorted(want)))
    print("docs: table self-test %s" % ("failed" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(self_test() if SELF_TEST else main())
