#!/usr/bin/python3
"""One line per variant of a pool-split compare folder (docs/chunk-pool-split.md):
the variant's axis values (split, corpus, zipf), then main pool tokens, chunk
pool tokens, chunk hit rate, chunk evictions, TTFT p50 and p99 ms, output
tok/s, preemptions, rejected requests and the main pool's peak (% of its
blocks), from the folder's compare.csv and each variant's metrics.json."""
import csv
import json
import os
import sys

for d in sys.argv[1:]:
    with open(os.path.join(d, 'compare.csv'), encoding='utf-8') as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        with open(os.path.join(d, r['folder'], 'metrics.json'), encoding='utf-8') as f:
            m = json.load(f)
        kv = m['kv_cache']
        print(*(w.split('=')[-1] for w in r['variant'].split()), kv['capacity_tokens'],
              m['memory']['chunk_pool_bytes'] // kv['kv_bytes_per_token'],
              round(float(r['kv_cache.chunk_hit_rate']), 3), kv['chunk_evictions'],
              round(float(r['latency_ms.ttft.p50']), 1), round(float(r['latency_ms.ttft.p99']), 1),
              round(float(r['throughput.output_tokens_per_s']), 1), r['requests.preemptions'],
              r['requests.rejected'], round(100 * kv['peak_used_bytes'] / (kv['num_blocks'] * kv['block_bytes'])))
