# Writes tests/cli/data/catalog-ledger.jsonl: the ledger JSON of every catalog model x 3
# scenarios, one line each, from a built kvledger. Run it only when a number is meant to change,
# and say which and why in the commit: tst_catalog_ledger holds every later build to it.
# Usage: python3 tests/cli/data/make-catalog-ledger.py build/release/app/kvledger OUT.jsonl
import json, subprocess, sys
exe = sys.argv[1]; out = sys.argv[2]
models = json.load(open('resources/models.json'))
models = models['models'] if isinstance(models, dict) else models
# The first two were written when the default scenario shared a 2K prefix by all requests;
# the default has no shared prefix since, and they name the prefix to keep their numbers.
scen = {
 'h100-prefix2k': ['--prefix-tokens','2048'],
 'h200-32k-fp8-prefix2k': ['--gpu','h200','--context','32768','--kv-dtype','fp8','--prefix-tokens','2048'],
 'a100-128k-tp4-noprefix': ['--gpu','a100-80gb','--tp','4','--context','131072','--prefix-tokens','0'],
}
with open(out,'w') as f:
    for m in models:
        for name, args in scen.items():
            r = subprocess.run([exe,'ledger','--model',m['id'],'--json']+args, capture_output=True, text=True)
            rec = {'model': m['id'], 'scenario': name, 'args': args, 'exit': r.returncode}
            try: rec['json'] = json.loads(r.stdout)
            except Exception: rec['stderr'] = r.stderr.strip()
            f.write(json.dumps(rec, sort_keys=True, separators=(',',':'))+'\n')
