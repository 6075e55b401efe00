#!/usr/bin/env bash
# `toysim tune --gpu` over the course's attention programs on the H100 (MACHINE=h200: on the H200,
# each point ranked by that machine's model, into gpu/results/tune_grid_h200/): at each shape, every
# tile the kernel takes is ranked by the model and then run (--sample all), so that the model's
# pick is measured against the best of the whole grid and the two orders are compared
# (Spearman's rho). Issue 37's benchmark; docs/gpu.md, "Choosing tiles".
#
#   bash gpu/tools/tune_grid.sh run  [toysim] [group]   # on the GPU: one JSON a cell into $OUT_DIR
#   bash gpu/tools/tune_grid.sh rescore [toysim]        # here: the current model's predictions against the cells' measured times
#   bash gpu/tools/tune_grid.sh table                   # the cells' JSON -> gpu/results/tune_grid_$MACHINE.md
#
# rescore ranks each cell's points again with `toysim tune` (no GPU) and keeps each point's
# measured time, so that a change to the model is judged on the same measurements; the cell
# says which commit's model ranked it ("predicted_by").
#
# group: fwd (fa2 on v3 and generated), rest (fa2_backward at n = 1024, fa2_causal, flash_decoding), decoding (flash_decoding alone),
# all (both), v3 (fa2_v3_mma alone), generated (generated fa2 alone), backward (fa2_backward's three cells), backward4096 (fa2_backward at n = 4096, d = 64), fwd16384 (generated fa2 at n = 16384, d = 128).
# Heads: the forward programs at heads·n = 65,536 (64, 16 and 4 heads); flash_decoding (one query
# a head) at 262,144; fa2_backward at n = 1024 with 16 heads and at n = 4096, d = 64 with 4: its
# inputs O and L were computed on the CPU (gpu run refused past 2·10^10 multiply-adds: n = 16384
# at one head), a minute a point at n = 4096, d = 128; the GPU fills them now (gpu/runtime/reference_fill.cu).
set -euo pipefail
mode=${1:-table}
machine=${MACHINE:-h100}
dir=${OUT_DIR:-gpu/results/tune_grid_$machine}
if [[ $mode == run ]]; then
  toysim=${2:-build/toysim}
  group=${3:-all}
  mkdir -p "$dir"
  cell() {  # name program kernel n d heads vary...
    local name=$1 program=$2 kernel=$3 n=$4 d=$5 heads=$6
    shift 6
    local args=(tune "$program" --set n="$n" --set d="$d" "$@" --heads "$heads" --dtype fp16 --machine "$machine" --gpu --sample all --repeats 10 --format json)
    [[ -n $kernel ]] && args+=(--kernel "$kernel")
    echo "== $name n=$n d=$d heads=$heads" >&2
    "$toysim" "${args[@]}" > "$dir/$name.n$n.d$d.json" || echo "   $name n=$n d=$d: exit $?" >&2
  }
  for d in 64 128; do
    for n in 1024 4096 16384; do
      heads=$((65536 / n))
      if [[ $group == fwd || $group == all || $group == v3 ]]; then
        cell fa2_v3_mma programs/attention/schedules/fa2_v3_mma.toy "" $n $d $heads --vary Br=64,128 --vary Bc=32,64,128
      fi
      if [[ $group == fwd || $group == all || $group == generated ]]; then
        cell fa2_generated programs/attention/fa2.toy generated $n $d $heads --vary Br=16,32,64,128 --vary Bc=16,32,64,128
      fi
      if [[ $group == rest || $group == all ]]; then
        cell fa2_causal programs/attention/schedules/fa2_causal.toy "" $n $d $heads --vary B=16,32,64,128
      fi
      if [[ $group == rest || $group == all || $group == decoding ]]; then
        cell flash_decoding programs/attention/flash_decoding.toy generated $n $d $((262144 / n)) --vary S=4,8,16,32,64 --vary Bc=16,32,64
      fi
      if [[ $group == rest || $group == all || $group == backward ]]; then
        if ((n == 1024)); then
          cell fa2_backward programs/attention/schedules/fa2_backward.toy "" $n $d 16 --vary Br=16,32,64 --vary Bc=16,32,64
        fi
      fi
      if [[ $group == backward4096 || $group == backward ]] && ((n == 4096 && d == 64)); then
        cell fa2_backward programs/attention/schedules/fa2_backward.toy "" $n $d 4 --vary Br=16,32,64 --vary Bc=16,32,64
      fi
      if [[ $group == fwd16384 ]] && ((n == 16384 && d == 128)); then
        cell fa2_generated programs/attention/fa2.toy generated $n $d $heads --vary Br=16,32,64,128 --vary Bc=16,32,64,128
      fi
    done
  done
  exit 0
fi
python3 - "$mode" "$dir" "${2:-build/toysim}" "$machine" <<'PY'
import glob, json, os, re, statistics, subprocess, sys
mode, dir, toysim, machine = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
gpu_name = machine.upper()
order = ["fa2_v3_mma", "fa2_generated", "fa2_backward", "fa2_causal", "flash_decoding"]

def ranks(v):
    order_ = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order_):
        j = i
        while j + 1 < len(order_) and v[order_[j + 1]] == v[order_[i]]: j += 1
        for k in range(i, j + 1): r[order_[k]] = (i + j) / 2 + 1
        i = j + 1
    return r

def spearman(a, b):  # as toysim's (sim/app/tune.cpp)
    if len(a) < 3: return None
    ra, rb = ranks(a), ranks(b)
    m = (len(a) + 1) / 2
    cov = sum((x - m) * (y - m) for x, y in zip(ra, rb))
    va, vb = sum((x - m) ** 2 for x in ra), sum((y - m) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va > 0 and vb > 0 else None

if mode == "rescore":
    version = subprocess.run([toysim, "--version"], capture_output=True, text=True).stdout.strip()
    for path in sorted(glob.glob(f"{dir}/*.json")):
        j = json.load(open(path))
        n, d = re.search(r"\.n(\d+)\.d(\d+)\.json$", path).groups()
        key = lambda p: json.dumps(p, sort_keys=True)
        old = {key(r["params"]): r for r in j["ranked"]}
        vary = {}
        for r in j["ranked"] + j["dropped"]:
            for k, v in r["params"].items(): vary.setdefault(k, []).append(v)
        args = [toysim, "tune", j["program"], "--set", f"n={n}", "--set", f"d={d}", "--heads", str(j["heads"]), "--dtype", j["dtype"],
                "--top", "1000", "--format", "json", "--machine", j.get("machine", machine)]
        for k, v in vary.items(): args += ["--vary", f"{k}=" + ",".join(str(x) for x in sorted(set(v)))]
        if j["kernel"] == "CUDA generated from the program": args += ["--kernel", "generated"]
        elif j["kernel"].startswith("kernel "): args += ["--kernel", j["kernel"].split()[1]]
        new = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        measured = ("measured_seconds", "checks_passed", "traffic_equal", "gpu_error")
        for r in new["ranked"]:
            r.update({f: old[key(r["params"])][f] for f in measured if key(r["params"]) in old and f in old[key(r["params"])]})
        j["ranked"], j["dropped"], j["points"] = new["ranked"], new["dropped"], new["points"]
        j["predicted_by"] = version
        # The run's summary, as tune --gpu writes it, for the new ranking.
        ok = [r for r in j["ranked"] if r.get("measured_seconds") and r.get("checks_passed") and r.get("traffic_equal")]
        if ok and "gpu" in j:
            best, pick = min(ok, key=lambda r: r["measured_seconds"]), j["ranked"][0]
            g = j["gpu"]
            g.update(pick=pick["params"], best=best["params"], best_measured_seconds=best["measured_seconds"])
            for f in ("pick_measured_seconds", "pick_over_best"): g.pop(f, None)
            if pick in ok:
                g.update(pick_measured_seconds=pick["measured_seconds"], pick_over_best=pick["measured_seconds"] / best["measured_seconds"] - 1)
            g["spearman"] = spearman([r["seconds"] for r in ok], [r["measured_seconds"] for r in ok])
        json.dump(j, open(path, "w"), indent=2)
        print(f"{os.path.basename(path)}: {len(new['ranked'])} ranked, {len(new['dropped'])} dropped")
    sys.exit(0)

def ms(s): return f"{s * 1e3:.3f} ms"
def params(p): return " ".join(f"{k}={v}" for k, v in p.items())
def passed(r): return "measured_seconds" in r and r["checks_passed"] and r["traffic_equal"]

out = [f"# `toysim tune --gpu` on the {gpu_name}: the model's pick against the best measured", "",
       f"Written by `{'MACHINE=' + machine + ' ' if machine != 'h100' else ''}bash gpu/tools/tune_grid.sh table` from the cells' JSON in `gpu/results/tune_grid_{machine}/`, which",
       f"`bash gpu/tools/tune_grid.sh run build/toysim GROUP` measured on the {gpu_name} (every tile the kernel takes at each shape: `--sample all`,",
       "fp16, the median of 10 launches). *pick / best*: the measured time of the model's first choice over the fastest measured point",
       "whose checks passed; *rho*: Spearman's rank correlation of predicted and measured times over those points; *error*: the median",
       "|predicted − measured| / measured over them. Predictions are those of the model at the commit each cell names (`predicted_by`:",
       "`bash gpu/tools/tune_grid.sh rescore` ranks the measured points again with the current model); measurements are the run's.", ""]
summary, sections, failed = [], [], []
for name in order:
    paths = glob.glob(f"{dir}/{name}.n*.json")
    if not paths: continue
    shape = lambda p: tuple(int(x) for x in re.search(r"\.n(\d+)\.d(\d+)\.json$", p).groups())
    paths.sort(key=lambda p: (shape(p)[1], shape(p)[0]))
    sections += [f"## {name}", "", "| n | d | heads | points run | dropped | model's pick | measured | best measured | measured | pick / best | rho | error |",
                 "| ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    ratios, rhos = [], []
    for path in paths:
        n, d = shape(path)
        j = json.load(open(path))
        ok = [r for r in j["ranked"] if passed(r)]
        for r in j["ranked"]:
            if "gpu_error" in r or ("measured_seconds" in r and not passed(r)):
                failed.append((os.path.basename(path), r))
        if not ok:
            whys = sorted({r["why"] for r in j["dropped"]} - {r["why"] for r in j["dropped"] if r["why"].startswith(j.get("kernel", "?").split()[-1] + " takes")})
            why = "; ".join(whys) if whys else "no point ran"
            sections.append(f"| {n} | {d} | {j['heads']} | 0 | {len(j['dropped'])} | none: {why} | | | | | | |")
            continue
        best = min(ok, key=lambda r: r["measured_seconds"])
        pick = j["ranked"][0]
        ratio = pick["measured_seconds"] / best["measured_seconds"] if passed(pick) else None
        if "measured_seconds" not in pick: failed.append((os.path.basename(path), dict(pick, gpu_error="the model's pick was not measured (rescored)")))
        rho = spearman([r["seconds"] for r in ok], [r["measured_seconds"] for r in ok])
        err = statistics.median(abs(r["seconds"] / r["measured_seconds"] - 1) for r in ok)
        if ratio is not None: ratios.append(ratio)
        else: ratios.append(float("inf"))
        if rho is not None: rhos.append(rho)
        sections.append(f"| {n} | {d} | {j['heads']} | {len(ok)} | {len(j['dropped'])} | {params(pick['params'])} | "
                        f"{ms(pick['measured_seconds']) if passed(pick) else 'its check failed'} | {params(best['params'])} | {ms(best['measured_seconds'])} | "
                        f"{f'{ratio:.3f}' if ratio else '-'} | {f'{rho:.2f}' if rho is not None else '- (under 3)'} | {err * 100:.0f}% |")
    sections.append("")
    within = sum(1 for r in ratios if r <= 1.05)
    worst = max(ratios) if ratios else None
    summary.append(f"| {name} | {len(ratios)} | {within} of {len(ratios)} | {'-' if worst is None else ('a failed check' if worst == float('inf') else f'{worst:.3f}')} | "
                   f"{f'{statistics.median(rhos):.2f}' if rhos else '-'} | {f'{min(rhos):.2f}' if rhos else '-'} |")
out += ["| program | cells measured | pick within 5% of best | worst pick / best | median rho | lowest rho |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
out += summary + [""] + sections
out.append(f"Points whose checks failed, whose counted traffic differed from the simulated, or that did not run: {len(failed)}.")
for f, r in failed:
    out.append(f"- {f} {params(r['params'])}: " + (r["gpu_error"] if "gpu_error" in r else
               "checks " + ("passed" if r["checks_passed"] else "FAILED") + ", traffic " + ("equal" if r["traffic_equal"] else "differs")))
open(f"{dir}.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
