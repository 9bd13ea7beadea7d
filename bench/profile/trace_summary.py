#!/usr/bin/python3
"""Per-op self time and call counts from a Chrome trace (bench_train_step --profile=TRACE.json,
LibTorch's legacy profiler; torch.profiler's export_chrome_trace works too).

Usage: trace_summary.py TRACE.json [STEPS=1] [TOP=25]
Self time = an op's duration minus the ops nested in it (same thread). Divided by STEPS.
The profiler adds ~1 us per recorded op: small ops look slower than they are, and malloc
behaves differently under it (run with MALLOC_TRIM_THRESHOLD_=4294967296
MALLOC_MMAP_THRESHOLD_=268435456, or the many freed trace buffers make big ops page-fault).
"""
import collections
import json
import sys

path = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1
top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
with open(path) as f:
    txt = f.read().rstrip().rstrip(',')
    if not txt.endswith(']'): txt += ']'
    ev = json.loads(txt)
if isinstance(ev, dict): ev = ev.get('traceEvents', [])
ev = [e for e in ev if e.get('ph') == 'X']
by_tid = collections.defaultdict(list)
for e in ev: by_tid[e.get('tid')].append(e)
self_t = collections.Counter(); tot_t = collections.Counter(); cnt = collections.Counter(); toplevel = collections.Counter()
for tid, es in by_tid.items():
    es.sort(key=lambda e: (e['ts'], -e['dur']))
    stack = []
    for e in es:
        s, d = e['ts'], e['dur']
        while stack and stack[-1][0] + stack[-1][1] <= s + 1e-9: stack.pop()
        name = e['name']
        if stack: stack[-1][2][0] -= d
        if not stack: toplevel[name] += 1
        rec = [s, d, [d], name]
        stack.append((s, d, rec[2], name))
        cnt[name] += 1; tot_t[name] += d
        e['_self'] = rec[2]
for e in ev: self_t[e['name']] += e['_self'][0]
total_self = sum(self_t.values())
print(f"events {len(ev)} ({len(ev)/steps:.0f}/step), top-level {sum(toplevel.values())/steps:.0f}/step, self total {total_self/1e3/steps:.1f} ms/step")
print(f"{'op':45s} {'self ms/step':>12s} {'%':>6s} {'calls/step':>10s} {'us/call':>8s}")
for n, t in self_t.most_common(top):
    print(f"{n[:45]:45s} {t/1e3/steps:12.2f} {100*t/total_self:6.1f} {cnt[n]/steps:10.1f} {t/cnt[n]:8.1f}")
