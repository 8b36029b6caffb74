# Prints README's "what changed between vLLM versions" table from a built kvledger: per model on
# its GPUs with vLLM's defaults and max_model_len = the context, the "GPU KV cache size" line vLLM prints and the requests you can
# run at the context, at each release listed.
# Usage: python3 docs/make-version-table.py build/release/app/kvledger
import json, subprocess, sys
exe = sys.argv[1]
rows = [('llama-3.1-8b', 'h100-80gb', 1, 32768), ('gemma-3-27b', 'h100-80gb', 1, 32768),
        ('llama-4-scout-17b-16e', 'h100-80gb', 4, 131072), ('qwen3-next-80b-a3b', 'h200', 2, 131072)]
versions = ['0.11', '0.12', '0.13', '0.20', '0.21', '0.31']
print('| Model, GPU, context | ' + ' | '.join('vLLM ' + v for v in versions) + ' |')
print('|---|' + '---|' * len(versions))
for model, gpu, tp, ctx in rows:
    cells = []
    for v in versions:
        r = subprocess.run([exe, 'ledger', '--json', '--model', model, '--gpu', gpu,
                            '--tp', str(tp), '--context', str(ctx), '--max-model-len', str(ctx),
                            '--vllm-version', v],
                           capture_output=True, text=True)
        d = json.loads(r.stdout)
        cells.append('{:,} tok · {:,} run{}'.format(d['gpu_kv_cache_tokens'], d['requests_you_can_run'],
                                              ' (refused)' if d['vllm_refused'] else ''))
    print('| {}, {} × {}, {:,} | {} |'.format(model, tp, gpu, ctx, ' | '.join(cells)))
