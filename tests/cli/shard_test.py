"""--shard K/N and merge-reports (issue 23): the N shards of a batch convert
every model exactly once, each model in the shard its documented hash gives
(FNV-1a 64 of the path as written, on the command line or relative to the
manifest, modulo N, is K - 1), whatever the order of the models; merge-reports
joins the shards' JSON reports into one report and one JUnit file.

    python3 shard_test.py BIN WORK MODEL    (MODEL: a convertible 1x3x32x32 model)"""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

MODEL = sys.argv.pop(3)
import cli_checks  # noqa: E402  (reads BIN and WORK from sys.argv)
from cli_checks import check, finish, path  # noqa: E402

BIN = os.path.abspath(cli_checks.BIN)


def fnv1a64(text):
    """FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211)."""
    h = 14695981039346656037
    for byte in text.encode():
        h ^= byte
        h = (h * 1099511628211) % (1 << 64)
    return h


def expected_shard(key, n):
    return fnv1a64(key) % n + 1


def run_in(cwd, *args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stderr + p.stdout


shutil.rmtree(cli_checks.WORK)
os.makedirs(path("models/b"))
names = [f"models/m{i}.pt" for i in range(6)] + [f"models/b/n{i}.pt" for i in range(3)]
for n in names:
    shutil.copy(MODEL, path(n))
N = 3

# Every shard, the models in one order and then reversed.
for label, order in [("given order", names), ("reversed", names[::-1])]:
    converted = []
    for k in range(1, N + 1):
        rc, out = run_in(cli_checks.WORK, *order, "--input", "1x3x32x32", "--out-dir",
                         f"out-{k}", "--shard", f"{k}/{N}", "--report", f"r{k}.json", "-q")
        check(f"{label}: shard {k}/{N} exits 0", rc == 0, out)
        with open(path(f"r{k}.json")) as f:
            models = [m["model"] for m in json.load(f)["models"]]
        want = sorted(n for n in names if expected_shard(n, N) == k)
        check(f"{label}: shard {k}/{N} converts the models FNV-1a puts there",
              sorted(models) == want, f"{sorted(models)} != {want}")
        outputs = sorted(os.listdir(path(f"out-{k}")))
        check(f"{label}: shard {k}/{N} writes only its models",
              outputs == sorted(os.path.basename(n)[:-3] + ".nnapi.pt" for n in want), outputs)
        shutil.rmtree(path(f"out-{k}"))
        converted += models
    check(f"{label}: every model converted exactly once", sorted(converted) == sorted(names),
          converted)
check("the split is not one shard (the test would be vacuous)",
      len({expected_shard(n, N) for n in names}) == N)

# merge-reports: one report and one JUnit file.
rc, out = run_in(cli_checks.WORK, "merge-reports", *[f"r{k}.json" for k in range(1, N + 1)],
                 "--report", "all.json", "--junit", "all.xml")
check("merge-reports of the shards exits 0", rc == 0, out)
with open(path("all.json")) as f:
    merged = json.load(f)
check("the merged report has every model once",
      sorted(m["model"] for m in merged["models"]) == sorted(names), merged["models"])
check("the merged report counts them", (merged["converted"], merged["failed"]) == (9, 0),
      (merged["converted"], merged["failed"]))
suite = ET.parse(path("all.xml")).getroot()
check("the merged JUnit file has one passing test case per model",
      sorted(t.get("name") for t in suite.iter("testcase")) == sorted(names)
      and suite.get("tests") == "9" and suite.get("failures") == "0", ET.tostring(suite)[:300])
rc, out = run_in(cli_checks.WORK, "merge-reports", "r1.json", "r2.json")
check("merge-reports writes the joined report to standard output by default",
      rc == 0 and json.loads(out[out.index("{"):])["models"], out[:300])

# A failing model in one shard: its report, the merge and the JUnit file say so.
with open(path("models/broken.pt"), "w") as f:
    f.write("not a model")
k = expected_shard("models/broken.pt", N)
rc, out = run_in(cli_checks.WORK, "models/broken.pt", "models/m0.pt", "--input", "1x3x32x32",
                 "--out-dir", "out-x", "--shard", f"{k}/{N}", "--report", "rx.json", "-q")
check("a shard with a failing model exits 1", rc == 1, out)
others = [f"r{j}.json" for j in range(1, N + 1) if j != expected_shard("models/m0.pt", N)]
rc, out = run_in(cli_checks.WORK, "merge-reports", "rx.json", *others, "--junit", "fail.xml")
check("merge-reports exits 1 when a model failed", rc == 1, out)
suite = ET.parse(path("fail.xml")).getroot()
failed = [t.get("name") for t in suite.iter("testcase") if t.find("failure") is not None]
check("the JUnit file names the failed model", failed == ["models/broken.pt"], failed)

# The manifest's models are keyed by their path relative to the manifest.
with open(path("models/manifest.json"), "w") as f:
    json.dump([{"model": n[len("models/"):], "inputs": ["1x3x32x32"]} for n in names], f)
seen = []
for k in range(1, N + 1):
    rc, out = run_in(cli_checks.WORK, "--manifest", "models/manifest.json", "--out-dir",
                     f"mout-{k}", "--shard", f"{k}/{N}", "--report", f"m{k}.json", "-q")
    with open(path(f"m{k}.json")) as f:
        models = sorted(os.path.relpath(m["model"], path("models"))
                        if os.path.isabs(m["model"]) else os.path.relpath(m["model"], "models")
                        for m in json.load(f)["models"])
    want = sorted(n[len("models/"):] for n in names if expected_shard(n[len("models/"):], N) == k)
    check(f"manifest shard {k}/{N}: the models FNV-1a of the manifest's paths puts there",
          rc == 0 and models == want, f"{rc} {models} != {want} {out}")
    seen += models
check("manifest: every model converted once", len(seen) == len(names), seen)

# An empty shard is a success with an empty report.
k_empty = next(k for k in range(1, 6) if expected_shard("models/m0.pt", 5) != k)
rc, out = run_in(cli_checks.WORK, "models/m0.pt", "--input", "1x3x32x32", "--out-dir", "out-e",
                 "--shard", f"{k_empty}/5", "--report", "re.json")
with open(path("re.json")) as f:
    check("an empty shard exits 0 with an empty report",
          rc == 0 and json.load(f)["models"] == [], out)

# Usage errors: exit 2, before any work.
for bad in ["0/3", "4/3", "3", "a/b", "1/0", "-1/3", ""]:
    rc, out = run_in(cli_checks.WORK, "models/m0.pt", "--input", "1x3x32x32", "--shard", bad)
    check(f"--shard '{bad}' is a usage error", rc == 2 and "--shard" in out, out)
rc, out = run_in(cli_checks.WORK, "merge-reports", "r1.json", "r1.json")
check("a model in two reports is a usage error naming it", rc == 2 and "m" in out
      and "earlier report" in out, out)
rc, out = run_in(cli_checks.WORK, "merge-reports", "models/m0.pt")
check("a file that is no report is a usage error naming it",
      rc == 2 and "models/m0.pt" in out and "not JSON" in out, out)
rc, out = run_in(cli_checks.WORK, "merge-reports", "missing.json")
check("a missing report is a usage error", rc == 2 and "missing.json" in out, out)
with open(path("other.json"), "w") as f:
    json.dump({"models": []}, f)
rc, out = run_in(cli_checks.WORK, "merge-reports", "other.json")
check("a JSON file that is no report is a usage error", rc == 2 and "schema_version" in out, out)

# examples/k8s-indexed-job.yaml as written, /data a work directory: its eight
# pods' commands (the nnapi-convert on PATH being BIN) and the merge it shows.
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "k8s-indexed-job.yaml")
with open(example) as f:
    text = f.read()
pod = text.split("- >-\n", 1)[1].split("volumeMounts:")[0]
pod = " ".join(line.strip() for line in pod.splitlines())
merge_cmd = " ".join(line.lstrip("#").strip().rstrip("\\").strip()
                     for line in text.splitlines()
                     if "merge-reports" in line or "--junit /data" in line)
data = path("data")
os.makedirs(data)
shutil.copy(path("models/manifest.json"), os.path.join(data, "manifest.json"))
for n in names:
    os.makedirs(os.path.dirname(os.path.join(data, n[len("models/"):])), exist_ok=True)
    shutil.copy(MODEL, os.path.join(data, n[len("models/"):]))
bindir = path("bin")
os.makedirs(bindir)
os.symlink(BIN, os.path.join(bindir, "nnapi-convert"))
env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
pods_ok = True
for index in range(8):
    p = subprocess.run(["sh", "-c", pod.replace("/data", data)], capture_output=True, text=True,
                       env=dict(env, JOB_COMPLETION_INDEX=str(index)))
    pods_ok = pods_ok and p.returncode == 0
check("examples/k8s-indexed-job.yaml: the eight pods' commands exit 0", pods_ok, pod)
p = subprocess.run(["sh", "-c", merge_cmd.replace("/data", data)], capture_output=True,
                   text=True, env=env)
with open(os.path.join(data, "report.json")) as f:
    merged = json.load(f)
check("examples/k8s-indexed-job.yaml: its merge-reports joins every model once",
      p.returncode == 0 and len(merged["models"]) == len(names)
      and os.path.exists(os.path.join(data, "junit.xml")), merge_cmd + p.stderr)

finish("shard")
