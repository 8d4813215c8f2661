#!/usr/bin/env bash
# Rewrites the generated parameter tables of docs/yaml.md (between
# `<!-- params:KIND:NAME -->` and `<!-- /params -->`) from the components'
# declarations: run from the source root after changing a declaration.
#   tests/refresh_yaml_params.sh build/kvsim
set -euo pipefail
bin=${1:-build/kvsim}
"$bin" list --params --markdown > /tmp/kvsim-params.$$.md
python3 - docs/yaml.md /tmp/kvsim-params.$$.md <<'PY'
import re, sys
doc_path, gen_path = sys.argv[1], sys.argv[2]
doc = open(doc_path).read()
blocks = dict(re.findall(r"(<!-- params:[^ ]+ -->)\n(.*?)<!-- /params -->", open(gen_path).read(), re.S))
def sub(m):
    if m.group(1) not in blocks:
        sys.exit(f"{m.group(1)}: no such component any more; remove the block")
    return m.group(1) + "\n" + blocks.pop(m.group(1)) + "<!-- /params -->"
doc = re.sub(r"(<!-- params:[^ ]+ -->)\n.*?<!-- /params -->", sub, doc, flags=re.S)
if blocks:
    doc = doc.rstrip("\n") + "\n\n" + "\n\n".join(k + "\n" + v + "<!-- /params -->" for k, v in blocks.items()) + "\n"
    print("appended new blocks at the end of docs/yaml.md: move them where they belong", file=sys.stderr)
open(doc_path, "w").write(doc)
PY
rm -f /tmp/kvsim-params.$$.md
